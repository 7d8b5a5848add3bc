// SandboxWorkspaceOut's answers to the executor's answers (no Docker: a fake
// sandbox). The change list is a question to the executor; an executor older than them means a container without the
// private area, which is a refusal, never a failed command.
import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { ExecutorRequestError } from '../../../services/sandbox/executor-client.ts';
import { SandboxWorkspaceOut } from '../../../services/sandbox/workspace-out.ts';

function outWith(answer: (op: string) => unknown) {
  const asked: string[] = [];
  const sandbox = {
    hold: () => () => {},
    async workspaceQuery<T>(op: 'changes'): Promise<T> {
      asked.push(op);
      const a = answer(op);
      if (a instanceof Error) throw a;
      return a as T;
    },
  };
  const noDocker = () => { throw new Error('no docker exec expected here'); };
  return { out: new SandboxWorkspaceOut(noDocker as unknown as () => Docker, () => 'tf-', async () => sandbox), asked };
}

describe('SandboxWorkspaceOut', () => {
  it('passes the change list on; no baseline yet is an empty list', async () => {
    const list = { baseline_at: '2026-12-01T00:00:00.000Z', changes: [{ path: 'a', change: 'added', bytes: 1 }] };
    expect(await outWith(() => list).out.changes('s')).toEqual(list);
    const none = outWith(() => ({ failed: { code: 'no_baseline', message: 'no baseline yet' } }));
    expect(await none.out.changes('s')).toEqual({ baseline_at: null, changes: [] });
  });

  it('a list too long for the executor\'s channel is asked of workspace-out.mjs in the container instead', async () => {
    const long = outWith(() => ({ failed: { code: 'answer_too_large', message: '200000 changes' } }));
    await expect(long.out.changes('s')).rejects.toThrow('no docker exec expected here');
  });

  it('a recorded failure and a moved tree are errors with their codes', async () => {
    const failed = outWith(() => ({ failed: { code: 'baseline_failed', message: 'no baseline: ENOSPC' } }));
    await expect(failed.out.changes('s')).rejects.toMatchObject({ code: 'baseline_failed', message: 'no baseline: ENOSPC' });
    const moved = outWith(() => ({ failed: { code: 'workspace_changed', message: 'try again' } }));
    await expect(moved.out.changes('s')).rejects.toMatchObject({ code: 'workspace_changed' });
  });

  it('an executor that does not know the question is a container without baselines (refused)', async () => {
    const old = outWith(() => new ExecutorRequestError('executor error: unknown op "changes"'));
    await expect(old.out.changes('s')).rejects.toMatchObject({ code: 'baseline_unsupported' });
    // Any other executor error stays what it is.
    const broken = outWith(() => new ExecutorRequestError('executor error: EIO'));
    await expect(broken.out.changes('s')).rejects.toBeInstanceOf(ExecutorRequestError);
  });

});
