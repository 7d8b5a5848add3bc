import { describe, expect, it, vi } from 'vitest';
import { CommandLifecycle } from '../../../services/pipeline/command-lifecycle.ts';
import type { Ledger, TransitionSpec } from '../../../services/pipeline/ledger.ts';
import { EMPTY_RESULT, FAILURE_STATUSES, type LedgerRecord, type LedgerStatus } from '../../../services/pipeline/ledger-record.ts';
import { IllegalTransition } from '../../../services/pipeline/lifecycle/table.ts';
import { endedResult, interruptedResult } from '../../../services/pipeline/lifecycle/results.ts';
import { PipelineMetrics } from '../../../services/pipeline/metrics.ts';

// The owner of status writes against an in-memory ledger (compare-and-set on
// the status, the turn's earliest failure): no Redis.

function record(index: number, status: LedgerStatus, extra: Partial<LedgerRecord> = {}): LedgerRecord {
  const at = new Date(Date.now() - 1000).toISOString();
  return {
    ...EMPTY_RESULT, session: 's1', turn: 1, id: String(index), tool: 'bash', path: null, dest: null, cmd: 'true',
    content: null, content_size: null, content_sha256: null, old_text: null, new_text: null, need_result: false,
    content_truncated: false, old_text_size: null, old_text_sha256: null, old_text_truncated: false, new_text_size: null, new_text_sha256: null, new_text_truncated: false,
    timeout: null, flow: 'api', risk: 'high', decision: 'allow', matched_rule: null, matched_rules: [], justification: null,
    policy_reason: null, enqueued_at: at, timings: { admitted_at: at, queued_at: at }, index, status, approval: null, injected: false,
    started_at: null, finished_at: null, executed_by: null, ...extra,
  };
}

function memoryLedger(records: LedgerRecord[]) {
  const byIndex = new Map(records.map((r) => [r.index, { ...r }]));
  let failure: { index: number; id: string } | null = null;
  const specs: TransitionSpec[] = [];
  const ledger = {
    specs,
    get: (i: number) => byIndex.get(i),
    async transition(rec: LedgerRecord, spec: TransitionSpec) {
      specs.push(spec);
      const cur = byIndex.get(rec.index)!;
      if (!spec.from.includes(cur.status)) return { ok: false, current: cur.status };
      if (spec.unlessTurnFailed && failure && failure.index < rec.index) return { ok: false, turnFailed: String(failure.index) };
      const { result, ...fields } = spec.fields ?? {};
      Object.assign(cur, result ?? {}, fields, { status: spec.to });
      if (FAILURE_STATUSES.has(spec.to) && (!failure || rec.index < failure.index)) failure = { index: rec.index, id: rec.id };
      return { ok: true, record: { ...cur } };
    },
    async turnFailure() { return failure; },
    async turnIndexes() { return [...byIndex.keys()]; },
    async statuses(_sid: string, idx: number[]) { return idx.map((i) => byIndex.get(i)!.status); },
    async many(_sid: string, idx: number[]) { return idx.map((i) => ({ ...byIndex.get(i)! })); },
    async failTurn(_sid: string, _turn: number, label: string) { failure = { index: 0, id: label }; return 0; },
  };
  return ledger;
}

function setup(records: LedgerRecord[], cancel = vi.fn(async () => 0)) {
  const ledger = memoryLedger(records);
  const metrics = new PipelineMetrics({ processMetrics: false });
  const life = new CommandLifecycle({ ledger: ledger as unknown as Ledger, metrics, sandboxes: { cancelRunning: cancel } });
  const finished = async () => (await metrics.commandsFinished.get()).values.map((v) => [v.labels.status, v.value]);
  return { ledger, metrics, life, finished, cancel };
}

describe('CommandLifecycle', () => {
  it('refuses an illegal pair before anything is written', async () => {
    const { ledger, life } = setup([record(1, 'succeeded')]);
    await expect(life.apply(record(1, 'succeeded'), 'start')).rejects.toThrow(IllegalTransition);
    await expect(life.apply(record(1, 'queued'), 'succeed')).rejects.toThrow(IllegalTransition);
    expect(ledger.specs).toEqual([]);
  });

  it('a failure is one compare-and-set from the status read, counted once, and skips the queued rest of the turn', async () => {
    const { ledger, life, finished } = setup([record(1, 'running'), record(2, 'queued'), record(3, 'queued'), record(4, 'succeeded')]);
    const out = await life.apply(record(1, 'running'), 'fail', { result: endedResult('boom', 'internal') });
    expect(out).toMatchObject({ ok: true, record: { index: 1, status: 'failed', error: 'boom', error_code: 'internal' } });
    expect(ledger.specs[0]).toMatchObject({ from: ['running'], to: 'failed', events: ['command_finished'], dropCommand: false, unlessTurnFailed: false });
    expect(ledger.specs[0]!.fields).toMatchObject({ result: { error: 'boom', error_code: 'internal' }, finished_at: expect.any(String) });
    expect([2, 3, 4].map((i) => ledger.get(i)!.status)).toEqual(['skipped', 'skipped', 'succeeded']);
    expect(ledger.get(2)).toMatchObject({ error: 'skipped: command 1 failed earlier in this turn', error_code: 'skipped' });
    expect(await finished()).toEqual([['failed', 1], ['skipped', 2]]);
  });

  it('a lost race changes nothing and counts nothing', async () => {
    const { life, finished } = setup([record(1, 'succeeded')]);
    const out = await life.apply(record(1, 'running'), 'interrupt', { result: interruptedResult() });
    expect(out).toEqual({ ok: false, current: 'succeeded' });
    expect(await finished()).toEqual([]);
  });

  it('a start refused because the turn failed meanwhile skips the rest too', async () => {
    const { ledger, life } = setup([record(1, 'running'), record(2, 'queued'), record(3, 'queued')]);
    await ledger.transition(record(1, 'running'), { from: ['running'], to: 'failed', events: [] });
    const out = await life.apply(record(2, 'queued'), 'start', { started: { at: new Date(), by: 'h:1' } });
    expect(out).toEqual({ ok: false, turnFailed: '1' });
    expect([2, 3].map((i) => ledger.get(i)!.status)).toEqual(['skipped', 'skipped']);
  });

  it('start records when and where it runs and observes the queue wait', async () => {
    const { ledger, life, metrics } = setup([record(1, 'queued')]);
    const at = new Date();
    await life.apply(record(1, 'queued'), 'start', { started: { at, by: 'host:42' } });
    expect(ledger.specs[0]).toMatchObject({ to: 'running', unlessTurnFailed: true, events: ['command_started'], fields: { started_at: at.toISOString(), executed_by: 'host:42' } });
    expect((await metrics.queueWait.get()).values.find((v) => v.metricName?.endsWith('_count'))?.value).toBe(1);
  });

  it('a command ran whose record keeps less than its bodies is dropped when final; one that never ran always is', async () => {
    const { ledger, life } = setup([record(1, 'running', { new_text_truncated: true }), record(2, 'running', { content_size: 10 }), record(3, 'queued')]);
    await life.apply(record(1, 'running', { new_text_truncated: true }), 'succeed', { result: EMPTY_RESULT });
    await life.apply(record(2, 'running', { content_size: 10 }), 'succeed', { result: EMPTY_RESULT });
    await life.skip(record(3, 'queued'), 'skipped: test');
    expect(ledger.specs.map((s) => s.dropCommand)).toEqual([true, false, true]);
  });

  it('interrupt stops what the dead worker left running; a failure to stop it is logged, not thrown', async () => {
    const cancel = vi.fn(async () => { throw new Error('no sandbox'); });
    const { ledger, life } = setup([record(1, 'running')], cancel);
    await expect(life.interrupt(record(1, 'running'))).resolves.toBeUndefined();
    expect(ledger.get(1)).toMatchObject({ status: 'interrupted', error_code: 'interrupted' });
    expect(cancel).toHaveBeenCalledWith('s1');
  });
});
