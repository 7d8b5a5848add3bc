import { describe, expect, it } from 'vitest';
import { LEDGER_STATUSES, type LedgerStatus } from '../../../services/pipeline/ledger-record.ts';
import {
  CREATED_STATUSES, IllegalTransition, LIFECYCLE_EVENTS, TRANSITIONS, eventFor, transition, type LifecycleEvent,
} from '../../../services/pipeline/lifecycle/table.ts';

// The lifecycle as the spec states it, written out independently of the table:
// [to, fails the turn, skips the rest, refused after a turn failure, events, command dropped].
type Expected = [LedgerStatus, boolean, boolean, boolean, string[], 'never' | 'always' | 'if_large'];
const FIN = ['command_finished'];
const LEGAL: Partial<Record<LedgerStatus, Partial<Record<LifecycleEvent, Expected>>>> = {
  queued: {
    ask: ['awaiting_approval', false, false, true, ['approval_requested'], 'never'],
    start: ['running', false, false, true, ['command_started'], 'never'],
    fail: ['failed', true, true, false, FIN, 'always'],
    forbid: ['forbidden', true, true, false, FIN, 'always'],
    skip: ['skipped', false, false, false, FIN, 'always'],
  },
  awaiting_approval: {
    start: ['running', false, false, true, ['approval_resolved', 'command_started'], 'never'],
    reject: ['rejected', true, true, false, ['approval_resolved', 'command_finished'], 'always'],
    fail: ['failed', true, true, false, FIN, 'always'],
  },
  running: {
    succeed: ['succeeded', false, false, false, FIN, 'if_large'],
    fail: ['failed', true, true, false, FIN, 'if_large'],
    forbid: ['forbidden', true, true, false, FIN, 'if_large'],
    interrupt: ['interrupted', true, true, false, FIN, 'if_large'],
  },
};

const pairs = LEDGER_STATUSES.flatMap((s) => LIFECYCLE_EVENTS.map((e) => [s, e] as const));

describe('command lifecycle table', () => {
  it('knows the ledger statuses of ledger-record.ts and eight events (72 pairs)', () => {
    expect(LEDGER_STATUSES).toHaveLength(9);
    expect(LIFECYCLE_EVENTS).toEqual(['ask', 'start', 'succeed', 'fail', 'forbid', 'reject', 'skip', 'interrupt']);
    expect(pairs).toHaveLength(72);
  });

  describe.each(pairs)('%s + %s', (status, event) => {
    const expected = LEGAL[status]?.[event];
    if (expected) {
      it(`→ ${expected[0]}`, () => {
        const [to, failsTurn, skipsRest, guardedByTurn, events, dropCommand] = expected;
        expect(transition(status, event)).toEqual({ from: status, event, to, failsTurn, skipsRest, guardedByTurn, events, dropCommand });
      });
    } else {
      it('is rejected', () => {
        expect(() => transition(status, event)).toThrow(IllegalTransition);
        try {
          transition(status, event);
        } catch (err) {
          expect(err).toMatchObject({ from: status, event, message: `illegal lifecycle transition: '${event}' from '${status}'` });
        }
      });
    }
  });

  it('has exactly the twelve legal rows, none twice, and nothing leaves a final status', () => {
    expect(TRANSITIONS).toHaveLength(12);
    expect(new Set(TRANSITIONS.map((t) => `${t.from}:${t.event}`)).size).toBe(12);
    const finals: LedgerStatus[] = ['succeeded', 'failed', 'skipped', 'forbidden', 'rejected', 'interrupted'];
    for (const s of finals) for (const e of LIFECYCLE_EVENTS) expect(() => transition(s, e)).toThrow(IllegalTransition);
  });

  it('every status is reachable from creation', () => {
    const seen = new Set<LedgerStatus>(CREATED_STATUSES);
    for (let grew = true; grew;) {
      grew = false;
      for (const t of TRANSITIONS) if (seen.has(t.from) && !seen.has(t.to)) { seen.add(t.to); grew = true; }
    }
    expect([...seen].sort()).toEqual([...LEDGER_STATUSES].sort());
  });

  it('maps a run outcome to its event', () => {
    expect(eventFor('succeeded')).toBe('succeed');
    expect(eventFor('failed')).toBe('fail');
    expect(eventFor('forbidden')).toBe('forbid');
    expect(transition('running', eventFor('forbidden')).to).toBe('forbidden');
  });
});
