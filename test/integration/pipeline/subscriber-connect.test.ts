// A process's subscriber connection (runtime.ts) may be asked to SUBSCRIBE
// while it is still connecting. ioredis writes SUBSCRIBE during the connect
// phase; with its ready check on, the INFO that followed was refused ("Connection
// in subscriber mode") and a worker crashed at start-up in CI. The subscriber
// is made without that check (createSubscriber): no error, the message arrives.
import { describe, expect, it } from 'vitest';
import { createRedis, createSubscriber } from '../../../services/pipeline/index.ts';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('the subscriber connection', () => {
  it('takes a SUBSCRIBE sent while it connects: no error, and the channel delivers', async () => {
    const channel = `tf-sub-connect-${process.pid}-${Date.now()}`;
    const sub = createSubscriber(URL, 'tf-test-sub');
    const pub = createRedis(URL, 'tf-test-pub');
    const errors: string[] = [];
    sub.on('error', (e: Error) => errors.push(e.message));
    try {
      const subscribed = new Promise<void>((resolve, reject) => {
        sub.once('connect', () => { sub.subscribe(channel).then(() => resolve(), reject); });
      });
      const got = new Promise<string>((resolve) => sub.on('message', (_c: string, m: string) => resolve(m)));
      await subscribed;
      await new Promise((r) => setTimeout(r, 300)); // where the ready check's INFO used to fail
      await pub.publish(channel, 'hello');
      expect(await got).toBe('hello');
      expect(errors).toEqual([]);
      expect(sub.status).toBe('ready');
    } finally {
      sub.disconnect();
      pub.disconnect();
    }
  });
});
