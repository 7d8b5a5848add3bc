// What two runs of the same job must share, with what differs on every run
// taken out: ids and tokens become numbered placeholders (in order of first
// appearance, so "the same session everywhere" is still checked), times and
// durations become <time>/<ms>, and the events are split into lanes whose
// order is deterministic — the model's stream (index 0) and one lane per
// ledger index — because how the two interleave depends on timing only.
import type { RawDump } from './jobs.ts';

export interface NormalDump {
  name: string;
  view: unknown;
  /** `model`, `command #N`, and the order commands were queued, started and finished in */
  lanes: Record<string, unknown[]>;
  ledger: unknown[];
  answers: unknown[];
  /** per interrupted turn and delta kind, the text streamed after its last command (see cutTails) */
  tails: Record<string, string>;
  /** events as streamed, and as compared (deltas joined, tails set apart) */
  counts: { events: number; compared: number; ledger: number };
}

const ISO_TIME = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})\b/g;
/** Random or per-process ids: job and session ids, the replay model's tool-call ids (its request counter). */
const IDS: [RegExp, string][] = [
  [/\bjob_[0-9a-f]{8,}\b/g, 'job'],
  [/\bses_[0-9a-f]{8,}\b/g, 'session'],
  [/\bcall_\d+_\d+\b/g, 'call'],
];

class Namer {
  #names = new Map<string, string>();
  #counts = new Map<string, number>();
  #tokens: string[] = [];

  name(raw: string, kind: string): string {
    let n = this.#names.get(raw);
    if (!n) {
      const c = (this.#counts.get(kind) ?? 0) + 1;
      this.#counts.set(kind, c);
      n = `<${kind}#${c}>`;
      this.#names.set(raw, n);
    }
    return n;
  }

  addToken(token: string): void {
    if (!this.#tokens.includes(token)) this.#tokens.push(token);
  }

  text(s: string): string {
    let out = s.replace(ISO_TIME, '<time>');
    for (const t of this.#tokens) out = out.split(t).join(this.name(t, 'token'));
    for (const [re, kind] of IDS) out = out.replace(re, (m) => this.name(m, kind));
    return out;
  }
}

const isTimeKey = (k: string) => k === 'at' || k.endsWith('_at');

function scrub(value: unknown, namer: Namer, key = ''): unknown {
  if (value === null || value === undefined) return value;
  if (isTimeKey(key) && (typeof value === 'string' || typeof value === 'number')) return '<time>';
  if (key.endsWith('_ms') && typeof value === 'number') return '<ms>';
  // the worker that ran a command is `host:pid`
  if (key === 'executed_by' && typeof value === 'string') return '<worker>';
  if (key === 'timings' && typeof value === 'object' && !Array.isArray(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, v === null ? null : '<time>']));
  }
  if (key === 'usage' && typeof value === 'object' && (value as { estimated?: unknown }).estimated === true) {
    // Estimated usage counts what the service received, and an interrupted
    // stream's tail (cutTails) is cut by timing; the prompt is still exact.
    return { ...(scrub(value, namer) as object), completion_tokens: '<estimated>', total_tokens: '<estimated>' };
  }
  if (typeof value === 'string') return namer.text(value);
  if (Array.isArray(value)) return value.map((v) => scrub(v, namer));
  if (typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrub(v, namer, k)]));
  return value;
}

/** Approval tokens are random and may appear anywhere once known (events, ledger `approval`, answers). */
function collectTokens(value: unknown, namer: Namer): void {
  if (Array.isArray(value)) value.forEach((v) => collectTokens(v, namer));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === 'token' && typeof v === 'string') namer.addToken(v);
      else collectTokens(v, namer);
    }
  }
}

type Ev = { event: string; data: Record<string, unknown> };

/**
 * The service coalesces a turn's deltas by size and by 50 ms of wall time, so
 * their boundaries vary; consecutive deltas of one kind and turn are one text.
 */
function mergeDeltas(lane: Ev[]): Ev[] {
  const out: Ev[] = [];
  for (const e of lane) {
    const last = out.at(-1);
    const isDelta = e.event === 'reasoning_delta' || e.event === 'text_delta';
    if (isDelta && last && last.event === e.event && last.data.turn === e.data.turn) {
      last.data = { ...last.data, text: `${String(last.data.text)}${String(e.data.text)}` };
    } else {
      out.push({ event: e.event, data: { ...e.data } });
    }
  }
  return out;
}

/**
 * A turn that ends interrupted (a failure, a forbidden command, a parse error,
 * a needed result) stops the model's stream when the service gets round to
 * it: a forbidden command is known only after its admission's Redis round
 * trip, a failure only when it has run. The text streamed after the turn's
 * last parsed command is the scripted continuation cut at a point set by
 * timing, so it leaves the lane; the diff checks that one side's tail is a
 * prefix of the other's.
 */
function cutTails(model: Ev[], tails: Record<string, string>): Ev[] {
  const interrupted = new Set(model.filter((e) => e.event === 'turn_ended' && !['done', 'tools'].includes(String(e.data.outcome))).map((e) => e.data.turn));
  const lastCommand = new Map<unknown, number>();
  model.forEach((e, i) => {
    if (e.event === 'turn_started' || e.event === 'command_parsed' || e.event === 'parse_error') lastCommand.set(e.data.turn, i);
  });
  return model.filter((e, i) => {
    const tail = interrupted.has(e.data.turn) && i > (lastCommand.get(e.data.turn) ?? Infinity) && (e.event === 'reasoning_delta' || e.event === 'text_delta');
    if (tail) tails[`turn ${String(e.data.turn)} ${e.event}`] = `${tails[`turn ${String(e.data.turn)} ${e.event}`] ?? ''}${String(e.data.text)}`;
    return !tail;
  });
}

function lanesOf(events: RawDump['events'], tails: Record<string, string>): Record<string, unknown[]> {
  const lanes: Record<string, Ev[]> = { model: [] };
  const order: Record<string, number[]> = { command_queued: [], command_started: [], command_finished: [] };
  for (const e of events) {
    // seq and the SSE id count events of both kinds together: timing again
    const { seq: _seq, index, ...data } = e.data as Record<string, unknown>;
    const lane = typeof index === 'number' && index > 0 ? `command #${index}` : 'model';
    (lanes[lane] ??= []).push({ event: e.event, data });
    if (typeof index === 'number' && order[e.event]) order[e.event]!.push(index);
  }
  const merged: Record<string, unknown[]> = Object.fromEntries(Object.entries(lanes).map(([k, v]) => [k, mergeDeltas(v)]));
  merged.model = cutTails(merged.model as Ev[], tails);
  for (const [event, indexes] of Object.entries(order)) merged[`order of ${event}`] = indexes;
  return merged;
}

const comparedEvents = (lanes: Record<string, unknown[]>) =>
  Object.entries(lanes).reduce((n, [k, v]) => n + (k.startsWith('order of') ? 0 : v.length), 0);

export function normalise(raw: RawDump): NormalDump {
  const namer = new Namer();
  collectTokens([raw.answers, raw.events, raw.ledger], namer);
  // One traversal order for both sides, so placeholders are numbered alike.
  const tails: Record<string, string> = {};
  const view = scrub(raw.view, namer);
  const lanes = scrub(lanesOf(raw.events, tails), namer) as Record<string, unknown[]>;
  const ledger = scrub(raw.ledger, namer) as unknown[];
  const answers = scrub(raw.answers, namer) as unknown[];
  return { name: raw.name, view, lanes, ledger, answers, tails: scrub(tails, namer) as Record<string, string>, counts: { events: raw.events.length, compared: comparedEvents(lanes), ledger: raw.ledger.length } };
}
