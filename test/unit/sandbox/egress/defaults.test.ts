// The default resolver and dialer of the egress proxy: the dialer takes an
// address and never resolves a name itself.
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultDialer, defaultResolver } from '../../../../services/sandbox/egress/upstream.ts';
import { echoServer } from './helpers.ts';

let echo: Awaited<ReturnType<typeof echoServer>>;
beforeEach(async () => {
  echo = await echoServer();
});
afterEach(async () => {
  await echo.close();
});

describe('defaults', () => {
  it('the dialer connects to an address', async () => {
    const s = defaultDialer('127.0.0.1', echo.port);
    await new Promise((resolve, reject) => s.once('connect', resolve).once('error', reject));
    expect(s.remoteAddress).toBe('127.0.0.1');
    s.destroy();
  });

  it('the dialer given a name fails instead of resolving it', async () => {
    const s = defaultDialer('localhost', echo.port);
    const err = await new Promise<Error>((resolve) => s.once('error', resolve));
    expect(err.message).toContain('not a checked address');
    expect(s.destroyed).toBe(true);
  });

  it('the resolver returns addresses as strings (an IP literal is its own answer, no query)', async () => {
    expect(await defaultResolver('127.0.0.1')).toEqual(['127.0.0.1']);
    expect(net.isIP((await defaultResolver('::1'))[0]!)).toBe(6);
  });
});
