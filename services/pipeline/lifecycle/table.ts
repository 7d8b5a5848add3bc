import type { LedgerEventType } from '../events.ts';
import { FAILURE_STATUSES, FINAL_STATUSES, type LedgerStatus } from '../ledger-record.ts';

// The command lifecycle of ARCHITECTURE.md as one table (pure, no I/O):
//   queued            → awaiting_approval (ask) | running (start) | failed | forbidden | skipped
//   awaiting_approval → running (start, once approved) | rejected | failed
//   running           → succeeded | failed | forbidden | interrupted
//   final statuses    → nothing
// A record is created `queued`, or final at once (`forbidden` by admission,
// `skipped` when its turn already failed): creation is the ledger's insert,
// not a transition. Every later change of status is one row below, found by
// `transition(status, event)`; a pair without a row is a programming error
// and is rejected, never ignored. The Lua `transition` script then applies
// the row as a compare-and-set, so two racing writers cannot both win.

export const LIFECYCLE_EVENTS = ['ask', 'start', 'succeed', 'fail', 'forbid', 'reject', 'skip', 'interrupt'] as const;
export type LifecycleEvent = (typeof LIFECYCLE_EVENTS)[number];

/** The statuses a record can be created with. */
export const CREATED_STATUSES = ['queued', 'forbidden', 'skipped'] as const satisfies readonly LedgerStatus[];
export type CreatedStatus = (typeof CREATED_STATUSES)[number];

export type Transition = {
  from: LedgerStatus;
  event: LifecycleEvent;
  to: LedgerStatus;
  /** the new status marks the turn failed (its earliest failing index wins) */
  failsTurn: boolean;
  /** later commands of the turn still queued are skipped once this transition is made */
  skipsRest: boolean;
  /** refused when the turn already failed at an earlier command: nothing starts, or waits, after a failure */
  guardedByTurn: boolean;
  /** the events written with the change, in the same atomic step */
  events: readonly LedgerEventType[];
  /**
   * When the stored full command is dropped: `always` once it can no longer
   * run (it never ran), `if_large` after it ran (only when the record keeps
   * less than its bodies: the full command is then the only copy of them).
   */
  dropCommand: 'never' | 'always' | 'if_large';
};

function row(from: LedgerStatus, event: LifecycleEvent, to: LedgerStatus, events?: readonly LedgerEventType[]): Transition {
  const final = FINAL_STATUSES.has(to);
  const fails = FAILURE_STATUSES.has(to);
  return {
    from, event, to,
    failsTurn: fails,
    skipsRest: fails,
    guardedByTurn: !final,
    events: events ?? (final ? ['command_finished'] : []),
    dropCommand: !final ? 'never' : from === 'running' ? 'if_large' : 'always',
  };
}

/** Every legal (status, event) pair. */
export const TRANSITIONS: readonly Transition[] = [
  row('queued', 'ask', 'awaiting_approval', ['approval_requested']),
  row('queued', 'start', 'running', ['command_started']),
  row('queued', 'fail', 'failed'),
  row('queued', 'forbid', 'forbidden'),
  row('queued', 'skip', 'skipped'),
  row('awaiting_approval', 'start', 'running', ['approval_resolved', 'command_started']),
  row('awaiting_approval', 'reject', 'rejected', ['approval_resolved', 'command_finished']),
  row('awaiting_approval', 'fail', 'failed'),
  row('running', 'succeed', 'succeeded'),
  row('running', 'fail', 'failed'),
  row('running', 'forbid', 'forbidden'),
  row('running', 'interrupt', 'interrupted'),
];

const BY_PAIR = new Map(TRANSITIONS.map((t) => [`${t.from}:${t.event}`, t]));

/** An event that the lifecycle does not allow from a status: a bug in the caller, never a no-op. */
export class IllegalTransition extends Error {
  readonly from: LedgerStatus;
  readonly event: LifecycleEvent;
  constructor(from: LedgerStatus, event: LifecycleEvent) {
    super(`illegal lifecycle transition: '${event}' from '${from}'`);
    this.name = 'IllegalTransition';
    this.from = from;
    this.event = event;
  }
}

/** The row for (status, event); throws IllegalTransition when there is none. */
export function transition(from: LedgerStatus, event: LifecycleEvent): Transition {
  const t = BY_PAIR.get(`${from}:${event}`);
  if (!t) throw new IllegalTransition(from, event);
  return t;
}

/** The event that ends a run with `status` (the executor's outcome, already judged). */
export function eventFor(status: 'succeeded' | 'failed' | 'forbidden'): LifecycleEvent {
  return status === 'succeeded' ? 'succeed' : status === 'failed' ? 'fail' : 'forbid';
}
