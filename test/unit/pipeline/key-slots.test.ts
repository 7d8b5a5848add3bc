import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createKeys } from '../../../services/pipeline/keys.ts';
import { hashTag, keySlot } from '../../../services/pipeline/key-slot.ts';
import { SCRIPTS } from '../../../services/pipeline/redis.ts';
import { LUA_CODES, ScriptCode } from '../../../services/pipeline/script-codes.ts';

// Redis Cluster readiness (issue 22): every key a script touches is declared
// in its KEYS (or is a declared prefix key plus a suffix, the same slot), and
// the keys a caller passes together share one hash tag. The scripts are read
// as text: each `redis.call` on a key must name KEYS[i], a local made from
// KEYS[i], or a key parameter of a lib function whose every call passes KEYS.

const dir = new URL('../../../services/pipeline/scripts/', import.meta.url);
const text = (f: string) => readFileSync(new URL(f, dir), 'utf8').replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--.*$/gm, '');
/** commands that take no key */
const KEYLESS = new Set(['PUBLISH', 'TIME']);
/** each lib function's parameters that are keys (by position, 1-based; 'rest' = the varargs) */
const LIB_KEY_PARAMS: Record<string, (number | 'rest')[]> = { emitEvent: [1, 2], followTtl: [1, 'rest'], creditRetired: [1, 2] };

/** Splits a Lua argument list at top-level commas. */
function args(list: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of list) {
    if (ch === ',' && depth === 0) { out.push(cur.trim()); cur = ''; continue; }
    if ('([{'.includes(ch)) depth++;
    if (')]}'.includes(ch)) depth--;
    cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

/** The argument list of each call of `fn(` in `src`. */
function calls(src: string, fn: string): string[][] {
  const out: string[][] = [];
  const re = new RegExp(`(?<![\\w.])${fn.replace('.', '\\.')}\\(`, 'g');
  for (let m = re.exec(src); m; m = re.exec(src)) {
    let depth = 1;
    let i = m.index + m[0].length;
    for (; i < src.length && depth > 0; i++) depth += src[i] === '(' ? 1 : src[i] === ')' ? -1 : 0;
    out.push(args(src.slice(m.index + m[0].length, i - 1)));
  }
  return out;
}

/** A key expression of a script: KEYS[i], or a local bound to `KEYS[i] .. suffix`. */
function isDeclared(src: string, expr: string): boolean {
  if (/^KEYS\[(\d+|[a-z]\w*)\]$/.test(expr)) return true; // a literal index, or a loop over declared ones
  return /^[A-Za-z_]\w*$/.test(expr) && new RegExp(`local ${expr} = KEYS\\[\\d+\\] \\.\\.`).test(src);
}

describe('every script touches only declared keys', () => {
  for (const [name, numKeys] of Object.entries(SCRIPTS)) {
    it(`${name}-${numKeys}.lua`, () => {
      const src = text(`${name}-${numKeys}.lua`);
      const bad: string[] = [];
      for (const a of calls(src, 'redis.call')) {
        const cmd = a[0]!.replace(/'/g, '').toUpperCase();
        if (!KEYLESS.has(cmd) && !isDeclared(src, a[1]!)) bad.push(`redis.call(${a.join(', ')})`);
      }
      for (const [lib, params] of Object.entries(LIB_KEY_PARAMS)) {
        for (const a of calls(src, lib)) {
          const keyArgs = params.flatMap((p) => (p === 'rest' ? a.slice(1) : [a[p - 1]!]));
          for (const k of keyArgs) if (!isDeclared(src, k)) bad.push(`${lib}(…${k}…)`);
        }
      }
      const highest = Math.max(0, ...[...src.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1])));
      expect(bad).toEqual([]);
      expect(highest).toBe(numKeys);
    });
  }

  it('the lib functions touch only their key parameters', () => {
    for (const [lib, params] of Object.entries(LIB_KEY_PARAMS)) {
      const src = text(`lib/${lib}.lua`);
      const names = args(/local function \w+\(([^)]*)\)/.exec(src)![1]!);
      const keyNames = new Set(params.flatMap((p) => (p === 'rest' ? ['key'] : [names[p - 1]!])));
      const bad = calls(src, 'redis.call').filter((a) => !KEYLESS.has(a[0]!.replace(/'/g, '').toUpperCase()) && !keyNames.has(a[1]!));
      expect(bad, lib).toEqual([]);
    }
  });
});

describe('the keys a caller passes together are one slot', () => {
  const k = createKeys('tfslot');
  const sid = 'sess_abc123';
  const groups: Record<string, string[]> = {
    createRecord: [k.ledgerCounter(sid), k.ledgerIds(sid), k.open(sid), k.turnState(sid, 3), k.turnCommands(sid, 3), k.eventSeq(sid), k.events(sid), k.recordPrefix(sid), k.sessionMeta(sid), k.sessionBytes(sid), k.runList(sid), k.queueMeta(sid), k.grants(sid), k.record(sid, 41)],
    runNext: [k.runList(sid), k.queueMeta(sid), k.sessionMeta(sid), k.grants(sid), k.recordPrefix(sid), k.record(sid, 9)],
    transition: [k.record(sid, 7), k.open(sid), k.turnState(sid, 2), k.eventSeq(sid), k.events(sid), k.sessionMeta(sid), k.sessionBytes(sid)],
    answerApproval: [k.approval(sid, 'tok'), k.grants(sid), k.record(sid, 5), k.sessionBytes(sid)],
    failTurn: [k.turnState(sid, 1), k.sessionMeta(sid)],
    appendEvent: [k.eventSeq(sid), k.events(sid), k.eventChannel(sid), k.sessionMeta(sid), k.sessionBytes(sid)],
    sessionClaim: [k.sessionMeta(sid), k.open(sid)],
    retireBytes: [k.ownerRetired('own1'), k.ownerRetiredBytes('own1')],
    retiredBytes: [k.ownerRetired('own1'), k.ownerRetiredBytes('own1')],
    idemAnswer: [k.idempotency('own1', 'h'), k.ownerRetired('own1'), k.ownerRetiredBytes('own1')],
    ownerCaps: [k.ownerSessions('own1'), k.ownerLive('own1')],
    job: [k.job('job_1'), k.jobDeliveries('job_1'), k.jobMessages('job_1')],
    bullmq: [`${k.bullPrefix}:${k.queueName(sid)}:wait`, `${k.bullPrefix}:${k.queueName(sid)}:c1`, k.sessionMeta(sid)],
  };
  for (const [name, keys] of Object.entries(groups)) {
    it(name, () => expect(new Set(keys.map(keySlot)).size).toBe(1));
  }

  it('different sessions, keys and jobs spread over slots (the tags differ)', () => {
    expect(new Set(['a1', 'b2', 'c3', 'd4'].map((s) => keySlot(k.sessionMeta(s)))).size).toBeGreaterThan(1);
    expect(hashTag(k.ownerLive('own1'))).toBe('o:own1');
    expect(hashTag(k.job('job_1'))).toBe('j:job_1');
  });

  it('the slot function is Redis\'s (CLUSTER KEYSLOT values)', () => {
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
    expect(keySlot('foo{}{bar}')).toBe(keySlot('foo{}{bar}'));
    expect(keySlot('123456789')).toBe(0x31c3 % 16384);
  });
});

describe('return codes: one map for TS and Lua', () => {
  it('every code is distinct and every script uses only codes of the map', () => {
    const codes = Object.values(ScriptCode);
    expect(new Set(codes).size).toBe(codes.length);
    for (const [name, numKeys] of Object.entries(SCRIPTS)) {
      for (const m of text(`${name}-${numKeys}.lua`).matchAll(/RC\.(\w+)/g)) expect(Object.keys(ScriptCode), name).toContain(m[1]);
    }
    expect(LUA_CODES).toContain(`OK = ${ScriptCode.OK}`);
  });
});

describe('keys.queueMeta', () => {
  it("is BullMQ's meta hash of the session's queue (createRecord reads its `paused` field)", async () => {
    const { Queue } = await import('bullmq');
    const { Redis } = await import('ioredis');
    const k = createKeys('tfslot');
    const connection = new Redis({ lazyConnect: true, maxRetriesPerRequest: null });
    const q = new Queue(k.queueName('sess_abc123'), { connection, prefix: k.bullPrefix });
    try {
      expect(q.keys.meta).toBe(k.queueMeta('sess_abc123'));
    } finally {
      connection.disconnect();
    }
  });
});
