import { describe, expect, it } from 'vitest';
import { createKeys } from '../../../services/pipeline/keys.ts';
import { holderOf, WorkerLiveness, type LivenessDeps } from '../../../services/pipeline/worker-liveness.ts';

// The job lock token names the process that holds a job (worker-liveness.ts):
// BullMQ's token is `<worker id>:<n>`, and this process's Worker ids start with its id.

describe('worker liveness ids', () => {
  const liveness = new WorkerLiveness({ keys: createKeys('t') } as unknown as LivenessDeps);

  it('a Worker id, and so its lock tokens, name this process', () => {
    const token = `${liveness.workerId()}:17`;
    expect(holderOf(token)).toBe(liveness.id);
    expect(liveness.workerId()).not.toBe(liveness.workerId());
  });

  it('a process id is a key name (no `.` or `:`), and a plain BullMQ token names no process', () => {
    expect(createKeys('t').workerBeat(liveness.id)).toBe(`t:worker:${liveness.id}`);
    expect(holderOf('4f1c2a9e-8d3b-4a8e-9d2c-1b2a3c4d5e6f:0')).toBe('');
  });
});
