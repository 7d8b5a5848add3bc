// The operator's pending approvals, kept live for the whole signed-in session
// whatever view is shown: one stream (GET /v1/approvals/events) gives a
// snapshot on every (re)connect, then each new request and each answer. The
// title and navigation count, the alerts and the approvals view all read it,
// so a request is never missed because the operator looked at a job.
import { stream } from './api.js';

/**
 * `fresh` is false from a dropped connection until the next snapshot: what
 * the page shows may be out of date, so nothing may be decided from it.
 * Listeners get (type, data): 'status' {state…}, 'snapshot' {approvals,
 * first}, 'requested' card, 'resolved' {token, status, decision…}. The
 * stream's own events (live-events.ts ApprovalsStreamEvent) are `snapshot`,
 * `approval` (a card) and `resolution` (an answer or expiry).
 */
export function pendingStore() {
  const cards = new Map();
  // Answered tokens (the last 1000): the server builds a request's card after reading it pending, so an
  // answer given meanwhile can reach this page before its request does; that request must not add a card.
  const answered = new Set();
  const listeners = new Set();
  let status = { state: 'connecting' };
  let fresh = false;
  let snapshots = 0;
  const emit = (type, data) => {
    for (const f of listeners) {
      try { f(type, data); } catch (err) { console.error('pending approvals listener failed', type, err); }
    }
  };
  const stop = stream('/v1/approvals/events', {
    onStatus: (s) => {
      status = s;
      if (s.state !== 'live') fresh = false;
      emit('status', s);
    },
    onEvent: (type, data) => {
      if (type === 'snapshot') {
        cards.clear();
        for (const a of data.approvals) cards.set(a.token, a);
        fresh = true;
        snapshots += 1;
        emit('snapshot', { approvals: data.approvals, first: snapshots === 1 });
      } else if (type === 'approval') {
        if (answered.has(data.token)) return;
        cards.set(data.token, data);
        emit('requested', data);
      } else if (type === 'resolution') {
        answered.add(data.token);
        if (answered.size > 1000) answered.delete(answered.values().next().value);
        cards.delete(data.token);
        emit('resolved', data);
      }
    },
  });
  return {
    get status() { return status; },
    get fresh() { return fresh; },
    /** true once the first snapshot arrived: `cards()` is the server's state (or was, when not fresh). */
    get loaded() { return snapshots > 0; },
    get count() { return cards.size; },
    cards: () => [...cards.values()],
    has: (token) => cards.has(token),
    subscribe(f) { listeners.add(f); return () => listeners.delete(f); },
    stop() { listeners.clear(); stop(); },
  };
}
