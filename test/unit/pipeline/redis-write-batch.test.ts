// batchWrites (redis-write-batch.ts): the writes of one loop turn leave in one
// writev; a later turn's in another; nothing is reordered or lost.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { batchWrites } from '../../../services/pipeline/redis-write-batch.ts';

/** A stream that records each call it gets from Node: one entry per `_write`, one per `_writev` (all its chunks). */
function recordingStream() {
  const calls: string[][] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) { calls.push([chunk.toString()]); done(); },
    writev(chunks, done) { calls.push(chunks.map((c) => (c.chunk as Buffer).toString())); done(); },
  });
  return { stream, calls };
}

const nextTurn = () => new Promise((r) => setImmediate(r));

describe('batchWrites', () => {
  it("sends one turn's writes together, in order, once the turn's callbacks have run", async () => {
    const { stream, calls } = recordingStream();
    batchWrites(stream as never);
    stream.write('a');
    stream.write('b');
    await Promise.resolve(); // a promise continuation of the same turn joins the batch
    stream.write('c');
    expect(calls).toEqual([]);
    await nextTurn();
    expect(calls).toEqual([['a', 'b', 'c']]);
  });

  it('starts a new batch in the next turn', async () => {
    const { stream, calls } = recordingStream();
    batchWrites(stream as never);
    stream.write('1');
    await nextTurn();
    stream.write('2');
    stream.write('3');
    await nextTurn();
    expect(calls).toEqual([['1'], ['2', '3']]);
  });

  it('holds the batch open through the turn\'s microtasks and nextTicks (a flush on nextTick would split it)', async () => {
    const { stream, calls } = recordingStream();
    batchWrites(stream as never);
    stream.write('a');
    process.nextTick(() => stream.write('b'));
    queueMicrotask(() => stream.write('c'));
    await nextTurn();
    expect(calls).toHaveLength(1); // which of the two queues runs first depends on the caller: not the point
    expect([...calls[0]!].sort()).toEqual(['a', 'b', 'c']);
    expect(stream.writableCorked).toBe(0);
  });

  it("keeps a write's callback and return value", async () => {
    const { stream } = recordingStream();
    batchWrites(stream as never);
    const done = new Promise<void>((resolve, reject) => { expect(stream.write('z', (err) => (err ? reject(err) : resolve()))).toBe(true); });
    await done;
  });
});
