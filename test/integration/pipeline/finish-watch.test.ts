// A REST turn's answer comes from the `command_finished` events its watch saw
// (finish-watch.ts): the ledger is read back only for the records it did not
// see, or could not keep. Real Redis and BullMQ; fake sandboxes.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRuntime, type Runtime } from '../../../services/main/index.ts';
import { runCommandsTurn, toResult } from '../../../services/pipeline/api-turn.ts';
import { Ledger } from '../../../services/pipeline/ledger.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';
import { cleanupPrefix, testConfig, testPrefix } from './helpers.ts';

const prefix = testPrefix('finish-watch');
let rt: Runtime;
beforeAll(async () => {
  rt = await createRuntime(testConfig(prefix, { THINKFLOW_MAX_COMMANDS_PER_TURN: '1000' }), { sandboxes: new FakeSandboxes() });
});
afterAll(async () => {
  await rt?.close();
  await cleanupPrefix(prefix);
});

const session = async () => (await rt.pipeline.createSession({ owner: null })).session_id;
const appends = (n: number) => Array.from({ length: n }, (_, i) => `<tf-append id="${i + 1}" path="log.txt">${i + 1},</tf-append>`).join('\n');

describe("a turn's answer", () => {
  it('is the records its finishes carried: no ledger read, and the same as the ledger says', async () => {
    const sid = await session();
    const many = vi.spyOn(Ledger.prototype, 'many');
    try {
      const out = await runCommandsTurn(rt.pipeline, sid, `${appends(3)}\n<tf-bash id="9" cmd="false" />`);
      expect(many).not.toHaveBeenCalled();
      expect(out.results.map((r) => [r.id, r.status])).toEqual([['1', 'succeeded'], ['2', 'succeeded'], ['3', 'succeeded'], ['9', 'failed']]);
      expect(out.results).toEqual((await rt.pipeline.entries(sid)).map(toResult)); // every field the answer has
    } finally {
      many.mockRestore();
    }
  });

  it('reads the ledger back when the watch could not keep every record (a turn of 300), and answers all of them', async () => {
    const sid = await session();
    const many = vi.spyOn(Ledger.prototype, 'many');
    try {
      const out = await runCommandsTurn(rt.pipeline, sid, appends(300));
      expect(many).toHaveBeenCalledTimes(1);
      expect(out.results.map((r) => r.id)).toEqual(Array.from({ length: 300 }, (_, i) => String(i + 1)));
      expect(new Set(out.results.map((r) => r.status))).toEqual(new Set(['succeeded']));
    } finally {
      many.mockRestore();
    }
  });
});
