// THINKFLOW_IDLE_PAUSE_S and the pause/unpause bookkeeping, without Docker
// (test/integration/sandbox/idle-pause.test.ts runs them on real containers).
import type Docker from 'dockerode';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ENV_DEFAULTS, loadConfig } from '../../../services/config/index.ts';
import type { ExecutorClient } from '../../../services/sandbox/executor-client.ts';
import { IdlePauses, sweepPeriodMs, type PausableEntry } from '../../../services/sandbox/idle-pause.ts';
import { periodic } from '../../../services/sandbox/periodic.ts';
import { resolveSandboxOptions } from '../../../services/sandbox/index.ts';

describe('THINKFLOW_IDLE_PAUSE_S', () => {
  it('defaults to 30 s, and 0 turns pausing off', () => {
    expect(ENV_DEFAULTS.THINKFLOW_IDLE_PAUSE_S).toBe(30);
    expect(loadConfig({}).sandboxIdlePauseS).toBe(30);
    expect(resolveSandboxOptions().idlePauseMs).toBe(30_000);
    expect(loadConfig({ THINKFLOW_IDLE_PAUSE_S: '0' }).sandboxIdlePauseS).toBe(0);
    expect(resolveSandboxOptions({ idlePauseMs: 0 }).idlePauseMs).toBe(0);
    expect(loadConfig({ THINKFLOW_IDLE_PAUSE_S: '5' }).sandboxIdlePauseS).toBe(5);
  });

  it('refuses a negative or fractional value, naming the variable', () => {
    expect(() => loadConfig({ THINKFLOW_IDLE_PAUSE_S: '-1' })).toThrow(/THINKFLOW_IDLE_PAUSE_S/);
    expect(() => loadConfig({ THINKFLOW_IDLE_PAUSE_S: '0.5' })).toThrow(/THINKFLOW_IDLE_PAUSE_S/);
  });

  it('sweeps a quarter of the idle time, between 50 ms and 5 s', () => {
    expect(sweepPeriodMs(30_000)).toBe(5_000);
    expect(sweepPeriodMs(8_000)).toBe(2_000);
    expect(sweepPeriodMs(100)).toBe(50);
  });
});

function setup(idlePauseMs: number, entry: PausableEntry) {
  const container = { pause: vi.fn(async () => undefined), unpause: vi.fn(async () => undefined) };
  const docker = { getContainer: vi.fn(() => container) } as unknown as Docker;
  const mark = vi.fn(async () => undefined);
  const changed = vi.fn();
  const pauses = new IdlePauses({ docker, namePrefix: 'tfu-pause-', pauseWith: 'docker', entry: () => entry, mark, changed }, idlePauseMs);
  return { container, mark, changed, pauses };
}
const client = () => ({ alive: true, close: vi.fn() }) as unknown as ExecutorClient & { close: ReturnType<typeof vi.fn> };
const idleEntry = (): PausableEntry => ({ client: client(), lastUsed: Date.now() - 1_000, inflight: 0 });

describe('IdlePauses', () => {
  it('pauses an idle entry once, marks it, and thaws it on resume, telling its listener each time', async () => {
    const e = idleEntry();
    const { container, mark, changed, pauses } = setup(500, e);
    expect(await pauses.pause('ses_a')).toBe(true);
    expect(await pauses.pause('ses_a')).toBe(true); // already paused: no second call
    expect(container.pause).toHaveBeenCalledTimes(1);
    expect(mark).toHaveBeenCalledWith('ses_a');
    expect(changed.mock.calls).toEqual([['ses_a', true]]);
    expect(e.paused).toBe(true);
    expect(await pauses.resume('ses_a', e)).toBe(true);
    expect(await pauses.resume('ses_a', e)).toBe(true); // running: nothing to thaw, nothing told
    expect(container.unpause).toHaveBeenCalledTimes(1);
    expect(changed.mock.calls).toEqual([['ses_a', true], ['ses_a', false]]);
    expect(e.paused).toBe(false);
  });

  it('tells the listener nothing when the pause or the unpause failed', async () => {
    const e = idleEntry();
    const { container, changed, pauses } = setup(500, e);
    container.pause.mockRejectedValueOnce(Object.assign(new Error('boom'), { statusCode: 500 }));
    await expect(pauses.pause('ses_a')).rejects.toThrow('boom');
    expect(await pauses.pause('ses_a')).toBe(true);
    container.unpause.mockRejectedValueOnce(new Error('gone'));
    expect(await pauses.resume('ses_a', e)).toBe(false);
    expect(changed.mock.calls).toEqual([['ses_a', true]]);
  });

  it('leaves alone what is in flight, connecting, used within minIdleMs or not connected', async () => {
    const cases: PausableEntry[] = [
      { ...idleEntry(), inflight: 1 },
      { ...idleEntry(), connecting: new Promise(() => {}) },
      { ...idleEntry(), lastUsed: Date.now() },
      { ...idleEntry(), client: undefined },
    ];
    for (const e of cases) {
      const { container, pauses } = setup(500, e);
      expect(await pauses.pause('ses_b', 200)).toBe(false);
      expect(container.pause).not.toHaveBeenCalled();
      expect(e.paused).toBeFalsy();
    }
  });

  it('never pauses with idlePauseMs 0', async () => {
    const e = idleEntry();
    const { container, pauses } = setup(0, e);
    expect(await pauses.pause('ses_c')).toBe(false);
    expect(container.pause).not.toHaveBeenCalled();
  });

  it('a failed pause is thrown and leaves the entry running; one paused elsewhere counts as paused', async () => {
    const e = idleEntry();
    const { container, pauses } = setup(500, e);
    container.pause.mockRejectedValueOnce(Object.assign(new Error('(HTTP code 409) container is not running'), { statusCode: 409 }));
    await expect(pauses.pause('ses_d')).rejects.toThrow(/not running/);
    expect(e.paused).toBe(false);
    container.pause.mockRejectedValueOnce(Object.assign(new Error('(HTTP code 409) Container abc is already paused'), { statusCode: 409 }));
    expect(await pauses.pause('ses_d')).toBe(true);
    expect(e.paused).toBe(true);
  });

  it('a failed unpause closes the client so that the caller opens the container again', async () => {
    const e = { ...idleEntry(), paused: true };
    const { container, pauses } = setup(500, e);
    container.unpause.mockRejectedValueOnce(Object.assign(new Error('(HTTP code 404) no such container'), { statusCode: 404 }));
    expect(await pauses.resume('ses_e', e)).toBe(false);
    expect((e.client as unknown as { close: ReturnType<typeof vi.fn> }).close).toHaveBeenCalled();
    expect(e.paused).toBe(false);
    // Thawed elsewhere meanwhile (dockerd: 500 "is not paused"): fine, the client stays.
    const f = { ...idleEntry(), paused: true };
    const other = setup(500, f);
    other.container.unpause.mockRejectedValueOnce(new Error('(HTTP code 500) server error - Container abc is not paused'));
    expect(await other.pauses.resume('ses_e', f)).toBe(true);
  });
});

describe('periodic', () => {
  afterEach(() => vi.useRealTimers());

  it('never stacks a pass on one still running, and goes on after a failed one', async () => {
    vi.useFakeTimers();
    let calls = 0;
    let finish!: () => void;
    const errors: unknown[] = [];
    const timer = periodic(100, () => {
      calls++;
      if (calls === 1) return new Promise<void>((r) => (finish = r));
      return Promise.reject(new Error('pass failed'));
    }, (err) => errors.push(err));
    await vi.advanceTimersByTimeAsync(350);
    expect(calls).toBe(1);
    finish();
    await vi.advanceTimersByTimeAsync(200);
    expect(calls).toBe(3);
    expect(errors).toHaveLength(2);
    clearInterval(timer);
  });
});
