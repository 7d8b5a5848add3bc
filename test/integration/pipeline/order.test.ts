import { describe, expect, it } from 'vitest';
import { suiteService } from '../suite-service.ts';
import { client } from './helpers.ts';

// Ordering under load, real Redis and Docker: 20 sessions in parallel, each
// sending 500 commands over 5 turns; every session's commands must execute in
// exactly the order they were sent, one at a time.
// 20 turns of one key at once: past the default THINKFLOW_MAX_TURNS_PER_KEY.
const svc = suiteService('order', { THINKFLOW_MAX_TURNS_PER_KEY: '20' });

const SESSIONS = 20;
const TURNS = 5;
const PER_TURN = 100;

type Entry = { turn: number; id: string; status: string; started_at: string; finished_at: string };

async function runSession(c: ReturnType<typeof client>, s: number): Promise<string> {
  const sid = ((await (await c.json('/v1/sessions', {})).json()) as { session_id: string }).session_id;
  for (let t = 0; t < TURNS; t++) {
    // Alternate tools so the order shows in the file *and* in the ledger.
    const body = Array.from({ length: PER_TURN }, (_, i) => {
      const n = t * PER_TURN + i + 1;
      return i % 10 === 9
        ? `<tf-bash id="${i + 1}" cmd="echo b${n} >> order.txt" />`
        : `<tf-append id="${i + 1}" path="order.txt">a${n}\n</tf-append>`;
    }).join('\n');
    const res = await c.text(`/v1/sessions/${sid}/commands`, body);
    const out = (await res.json()) as { results: { id: string; status: string }[] };
    expect(out.results.filter((r) => r.status !== 'succeeded')).toEqual([]);
    expect(out.results.map((r) => r.id)).toEqual(Array.from({ length: PER_TURN }, (_, i) => String(i + 1)));
  }
  void s;
  return sid;
}

describe('ordering (real Redis and Docker)', () => {
  it(`keeps ${TURNS * PER_TURN} commands in order per session while ${SESSIONS} sessions run in parallel`, async () => {
    const c = client(svc.url!);
    const t0 = Date.now();
    const sids = await Promise.all(Array.from({ length: SESSIONS }, (_, s) => runSession(c, s)));
    const elapsed = (Date.now() - t0) / 1000;
    const expected = Array.from({ length: TURNS * PER_TURN }, (_, k) => `${k % 10 === 9 ? 'b' : 'a'}${k + 1}`).join('\n') + '\n';
    let maxOverlap = 0;
    for (const sid of sids) {
      const file = await c.get(`/v1/sessions/${sid}/files/order.txt`);
      expect(await file.text()).toBe(expected);
      const { entries } = (await (await c.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: Entry[] };
      expect(entries).toHaveLength(TURNS * PER_TURN);
      expect(entries.map((e) => `${e.turn}:${e.id}`)).toEqual(
        Array.from({ length: TURNS * PER_TURN }, (_, k) => `${Math.floor(k / PER_TURN) + 1}:${(k % PER_TURN) + 1}`));
      // One at a time: each command starts no earlier than the previous one finished.
      for (let i = 1; i < entries.length; i++) {
        if (entries[i]!.started_at < entries[i - 1]!.finished_at) maxOverlap += 1;
      }
    }
    expect(maxOverlap).toBe(0);
    process.stderr.write(`order test: ${SESSIONS * TURNS * PER_TURN} commands in ${elapsed.toFixed(1)} s\n`);
  }, 300_000);
});
