import { withIds } from '../log/index.ts';
import type { BaselineInfo, Sandboxes } from './sandboxes.ts';

// The baseline of a session's workspace (API.md: GET …/changes compares
// against "the workspace after its seeded files or uploads, before its first
// command"). Seeding and uploads reset it when they are done; the first
// command takes it when neither happened. Taking it is the sandbox's
// (services/sandbox/workspace-out.ts); this decides what a failure means.

/**
 * The sandbox ran the baseline program and it refused or failed (a full
 * workspace, a container from before baselines): the failure is recorded in
 * the sandbox, where the change list reports it, and the session goes on.
 * Anything else (the sandbox could not be asked) is the caller's failure.
 */
function decidedInSandbox(err: unknown): boolean {
  const e = err as { name?: string; code?: unknown; exitCode?: unknown };
  return e.name === 'WorkspaceExecError' && typeof e.exitCode === 'number' && typeof e.code === 'string' && !e.code.startsWith('sandbox_');
}

/**
 * Makes the workspace as it is now the session's baseline. Called after
 * seeding files and after a workspace upload; null when the sandbox could
 * not keep one (logged; GET …/changes then says why).
 */
export async function resetBaseline(sandboxes: Sandboxes, sid: string): Promise<BaselineInfo | null> {
  if (!sandboxes.workspace) return null;
  try {
    return await sandboxes.workspace.setBaseline(sid);
  } catch (err) {
    if (!decidedInSandbox(err)) throw err;
    withIds({ session_id: sid }).warn({ err }, 'the workspace baseline could not be taken; its change list will say so');
    return null;
  }
}

/** Before a command: takes the baseline unless the workspace has one. Throws only when the sandbox could not be asked. */
export async function ensureBaseline(sandboxes: Sandboxes, sid: string): Promise<void> {
  if (!sandboxes.workspace) return;
  try {
    await sandboxes.workspace.ensureBaseline(sid);
  } catch (err) {
    if (!decidedInSandbox(err)) throw err;
    withIds({ session_id: sid }).warn({ err }, 'the workspace baseline could not be taken before the first command; its change list will say so');
  }
}
