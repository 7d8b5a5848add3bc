// Container starts are bounded per process (THINKFLOW_SANDBOX_START_CONCURRENCY):
// past the bound a start waits its turn, in arrival order, and a failed start frees its slot.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../services/config/index.ts';
import { resolveSandboxOptions } from '../../../services/sandbox/sandbox-options.ts';
import { StartSlots } from '../../../services/sandbox/start-slots.ts';

const tick = () => new Promise((r) => setTimeout(r, 1));

describe('StartSlots', () => {
  it('runs at most `limit` at once, the others in arrival order, and a failure frees its slot', async () => {
    const slots = new StartSlots(2);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const gates: (() => void)[] = [];
    const start = (i: number, fail = false) => slots.run(async () => {
      running++;
      most = Math.max(most, running);
      order.push(i);
      await new Promise<void>((r) => gates.push(r));
      running--;
      if (fail) throw new Error(`start ${i} failed`);
      return i;
    });
    const settled = Promise.allSettled([start(1, true), start(2), start(3), start(4), start(5)]);
    await tick();
    expect([slots.active, slots.waiting, order]).toEqual([2, 3, [1, 2]]);
    for (let i = 0; i < 5; i++) {
      gates.shift()!();
      await tick();
    }
    const out = await settled;
    expect(out.map((o) => o.status)).toEqual(['rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(order).toEqual([1, 2, 3, 4, 5]);
    expect(most).toBe(2);
    expect([slots.active, slots.waiting]).toEqual([0, 0]);
  });

  it('refuses a bound that is not a positive integer', () => {
    expect(() => new StartSlots(0)).toThrow(/positive integer/);
    expect(() => new StartSlots(1.5)).toThrow(/positive integer/);
  });

  it('defaults: 4 starts at once and the control socket, from the environment schema down to the sandbox options', () => {
    expect(resolveSandboxOptions({})).toMatchObject({ startConcurrency: 4, executorChannel: 'socket' });
    expect(loadConfig({})).toMatchObject({ sandboxStartConcurrency: 4, executorChannel: 'socket' });
    expect(loadConfig({ THINKFLOW_SANDBOX_START_CONCURRENCY: '16', THINKFLOW_EXECUTOR_CHANNEL: 'attach' })).toMatchObject({ sandboxStartConcurrency: 16, executorChannel: 'attach' });
    expect(() => loadConfig({ THINKFLOW_SANDBOX_START_CONCURRENCY: '0' })).toThrow(/THINKFLOW_SANDBOX_START_CONCURRENCY/);
    expect(() => loadConfig({ THINKFLOW_EXECUTOR_CHANNEL: 'pipe' })).toThrow(/THINKFLOW_EXECUTOR_CHANNEL/);
  });
});
