// Usage when the provider sends none (API.md: estimated with a tokenizer,
// marked "estimated": true): the estimate counts everything the model
// received and produced — the reasoning stream, tool schemas, tool calls and
// their results — and lands within 10 % of what the provider bills for the
// same transcript. The replay model is the provider: it bills with
// gpt-tokenizer's implementation of OpenAI's chat accounting (o200k_base) over
// the request as it arrived and the deltas it actually streamed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TranscriptInput } from '../../../services/replay-model/transcript.ts';
import { startHarness, type Harness } from './harness.ts';

const para = (topic: string) => Array.from({ length: 6 }, (_, i) => `${topic} ${i + 1}: the team weighs each option, writes down the trade-offs and what it learned, so the next reader can follow.`).join('\n');

const thinkflowTurns: TranscriptInput['turns'] = [
  {
    reasoning: `I will lay out the notes, then look at the tree.\n<tf-mkdir id="1" path="notes" />\n<tf-write id="2" path="notes/a.md">\n${para('Alpha')}\n</tf-write>\n<tf-write id="3" path="notes/b.md">\n${para('Beta')}\n</tf-write>\nNow the listing.`,
    text: 'Two notes written; checking the folder.',
    tool_calls: [{ id: 'call_ls', name: 'list_files', arguments: { path: 'notes' } }],
  },
  { reasoning: 'Both files are there; nothing else to do.', text: 'Done: notes/a.md and notes/b.md.' },
];
const reactTurns: TranscriptInput['turns'] = [
  {
    text: 'Writing both notes at once.',
    tool_calls: [
      { id: 'call_a', name: 'write', arguments: { path: 'notes/a.md', content: para('Alpha') } },
      { id: 'call_b', name: 'write', arguments: { path: 'notes/b.md', content: para('Beta') } },
    ],
  },
  { text: 'Done: notes/a.md and notes/b.md.' },
];
/** need_result interrupts the first stream: the provider never gets to send that call's usage. */
const interruptedTurns: TranscriptInput['turns'] = [
  { reasoning: `<tf-write id="1" path="a.md">\n${para('Gamma')}\n</tf-write>\n<tf-read id="2" path="a.md" />\nAfter reading I would go on with more and more text that is never sent.`, text: 'never sent' },
  { reasoning: 'Read it; fine.', text: 'a.md is written.' },
];

const TRANSCRIPTS: TranscriptInput[] = [
  { name: 'tf-silent', match: 'usage thinkflow silent', flow: 'thinkflow', usage: false, delay_ms: 0, turns: thinkflowTurns },
  { name: 'tf-billed', match: 'usage thinkflow billed', flow: 'thinkflow', delay_ms: 0, turns: thinkflowTurns },
  { name: 're-silent', match: 'usage react silent', flow: 'react', usage: false, delay_ms: 0, turns: reactTurns },
  { name: 're-billed', match: 'usage react billed', flow: 'react', delay_ms: 0, turns: reactTurns },
  { name: 'interrupted', match: 'usage interrupted', flow: 'thinkflow', delay_ms: 3, chunk: 8, turns: interruptedTurns },
];

let h: Harness;
beforeAll(async () => {
  h = await startHarness('usage', TRANSCRIPTS);
});
afterAll(async () => {
  await h?.close();
});

/** Runs a job; returns its view and the provider's bill for its requests (from the replay model's log). */
async function run(task: string, flow: 'thinkflow' | 'react') {
  const first = h.model.requests;
  const { job_id } = await h.submit({ task, flow });
  const job = await h.waitFinal(job_id);
  const billed = h.model.log.slice(first).reduce((sum, e) => ({
    prompt_tokens: sum.prompt_tokens + e.usage!.prompt_tokens, completion_tokens: sum.completion_tokens + e.usage!.completion_tokens,
  }), { prompt_tokens: 0, completion_tokens: 0 });
  return { job, billed };
}

const within10 = (estimate: number, reference: number) => Math.abs(estimate - reference) / reference;

describe('usage estimate without provider figures', () => {
  for (const flow of ['thinkflow', 'react'] as const) {
    it(`${flow}: the estimate is within 10 % of the provider's figures for the same transcript`, async () => {
      const silent = await run(`usage ${flow} silent`, flow);
      const billed = await run(`usage ${flow} billed`, flow);
      expect(silent.job).toMatchObject({ status: 'succeeded', api_calls: 2 });
      expect(billed.job).toMatchObject({ status: 'succeeded', api_calls: 2 });
      expect(silent.job.usage.estimated).toBe(true);
      expect(billed.job.usage.estimated).toBeUndefined();
      // The provider's figures arrived as sent.
      expect(billed.job.usage).toMatchObject(billed.billed);
      const ref = billed.job.usage;
      const est = silent.job.usage;
      expect(within10(est.prompt_tokens, ref.prompt_tokens), `prompt ${est.prompt_tokens} vs ${ref.prompt_tokens}`).toBeLessThanOrEqual(0.1);
      expect(within10(est.completion_tokens, ref.completion_tokens), `completion ${est.completion_tokens} vs ${ref.completion_tokens}`).toBeLessThanOrEqual(0.1);
      expect(est.total_tokens).toBe(est.prompt_tokens + est.completion_tokens);
    });
  }

  it('a stream aborted before its usage chunk is estimated, close to what the provider billed for what it streamed', async () => {
    const { job, billed } = await run('usage interrupted', 'thinkflow');
    expect(job).toMatchObject({ status: 'succeeded', api_calls: 2 });
    expect(job.usage.estimated).toBe(true);
    expect(within10(job.usage.prompt_tokens, billed.prompt_tokens), `prompt ${job.usage.prompt_tokens} vs ${billed.prompt_tokens}`).toBeLessThanOrEqual(0.1);
    expect(within10(job.usage.completion_tokens, billed.completion_tokens), `completion ${job.usage.completion_tokens} vs ${billed.completion_tokens}`).toBeLessThanOrEqual(0.1);
  });
});
