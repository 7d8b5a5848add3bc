// The same task suite through the `thinkflow` flow and two ReAct baselines on
// the built-in replay model: `react` issues every independent tool call of a
// step together (parallel tool calls, as current models do; the headline
// baseline), `react-serial` makes one tool call per model call (the older
// baseline). Model calls, prompt/completion tokens and wall time side by side.
// Tokens: the replay model bills like a provider (gpt-tokenizer's
// implementation of OpenAI's chat accounting, o200k_base, over each request
// and what it streamed); a call whose stream the service interrupted never
// gets that usage chunk, and the service then counts it itself (`estimated`).
// Needs Redis, Docker and the sandbox image (scripts/setup-machine.sh).
// Run: npm run bench:flows
import { modelEndpoint } from '../../services/agent/index.ts';
import { loadConfig } from '../../services/config/index.ts';
import { JobRequest, JobsService, WebhookSender, type JobView } from '../../services/jobs/index.ts';
import { createRuntime } from '../../services/main/index.ts';
import { createRedis, deleteByPattern } from '../../services/pipeline/index.ts';
import { BUILTIN_TRANSCRIPTS, DEMO_TASK, reactSerialTranscript, SCENARIOS, startReplayModel } from '../../services/replay-model/index.ts';

const TASKS = [
  { name: 'web project skeleton (9 commands)', task: DEMO_TASK, multiFile: true, interruptions: 0 },
  { name: 'five-chapter text (7 commands)', task: 'Write a five-chapter short story, one file per chapter, with a table of contents.', multiFile: true, interruptions: 0 },
  { name: 'mid-way failure (4 + 2 commands)', task: 'Prepare the release notes for 1.1 and bump the version.', multiFile: false, interruptions: 1 },
];
type Variant = 'thinkflow' | 'react' | 'react-serial';

const prefix = `tfbench${process.pid}`;
const sandboxPrefix = `tfbench${process.pid}-`;
const rt = await createRuntime(loadConfig({ ...process.env, THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_SANDBOX_PREFIX: sandboxPrefix, THINKFLOW_POLICY_DIR: 'policies' }));
// One replay model per script set: the built-in one (thinkflow and parallel react), and the serial react scripts.
const models = [await startReplayModel({ transcripts: BUILTIN_TRANSCRIPTS }), await startReplayModel({ transcripts: SCENARIOS.map(reactSerialTranscript) })];
const services = models.map((m) => new JobsService({
  redis: rt.redis, keys: rt.keys, pipeline: rt.pipeline, endpoint: modelEndpoint(m.baseUrl, undefined, 'thinkflow-replay', 'replay'), webhooks: new WebhookSender({ secret: 'bench' }),
}));
for (const s of services) await s.start();

/** Wall time is the median of this many runs (a loaded machine and container start-up make single runs noisy); tokens and calls do not vary. */
const REPS = 3;

async function run(task: string, variant: Variant): Promise<JobView & { wall_ms: number }> {
  const runs = [];
  for (let i = 0; i < REPS; i++) runs.push(await runOnce(task, variant));
  const walls = runs.map((r) => r.wall_ms).sort((a, b) => a - b);
  return { ...runs[0]!, wall_ms: walls[Math.floor(REPS / 2)]! };
}

async function runOnce(task: string, variant: Variant): Promise<JobView & { wall_ms: number }> {
  const jobs = services[variant === 'react-serial' ? 1 : 0]!;
  const t0 = performance.now();
  const submitted = await jobs.submit(JobRequest.parse({ task, flow: variant === 'thinkflow' ? 'thinkflow' : 'react', limits: { max_turns: 40 } }), null);
  await jobs.settled(submitted.job_id);
  const view = (await jobs.store.get(submitted.job_id))!.view;
  await rt.pipeline.deleteSession(view.session_id);
  return { ...view, wall_ms: performance.now() - t0 };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const rows: string[] = [];
let ok = true;
try {
  // One warm-up job so container start-up and JIT are not billed to the first row.
  await runOnce(DEMO_TASK, 'thinkflow');
  console.log('task                               | flow         | status    | calls | prompt tok | completion tok | tokens   | wall ms (median of 3) | prompt vs react');
  for (const t of TASKS) {
    const tf = await run(t.task, 'thinkflow');
    const re = await run(t.task, 'react');
    const serial = await run(t.task, 'react-serial');
    const ratio = tf.usage.prompt_tokens / re.usage.prompt_tokens;
    for (const [flow, v] of [['thinkflow', tf], ['react', re], ['react-serial', serial]] as const) {
      const vsReact = flow === 'react' ? '100%' : pct(v.usage.prompt_tokens / re.usage.prompt_tokens);
      rows.push(`${t.name.padEnd(34)} | ${flow.padEnd(12)} | ${v.status.padEnd(9)} | ${String(v.api_calls).padStart(5)} | ${String(v.usage.prompt_tokens).padStart(10)} | ${String(v.usage.completion_tokens).padStart(14)} | ${(v.usage.estimated ? 'estimate' : 'provider').padEnd(8)} | ${v.wall_ms.toFixed(0).padStart(21)} | ${vsReact}`);
    }
    const minimum = 1 + t.interruptions;
    const pass = [tf, re, serial].every((v) => v.status === 'succeeded') && tf.api_calls === minimum && (!t.multiFile || ratio <= 0.4);
    ok &&= pass;
    rows.push(`${''.padEnd(34)}   thinkflow calls ${tf.api_calls} (minimum ${minimum}, parallel react ${re.api_calls}), prompt tokens ${pct(ratio)} of parallel react${t.multiFile ? ' (target <= 40%)' : ''}: ${pass ? 'PASS' : 'FAIL'}`);
    console.log(rows.splice(0).join('\n'));
  }
  console.log('\ntokens: "provider" = every call\'s usage as the replay model billed it (gpt-tokenizer, OpenAI chat accounting, o200k_base);');
  console.log('        "estimate" = at least one call was interrupted before the provider\'s usage chunk, and the service counted it (same tokenizer).');
} finally {
  for (const s of services) await s.close();
  for (const m of models) await m.close();
  await rt.close();
  const r = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'bench-cleanup');
  await deleteByPattern(r, `${prefix}:*`);
  r.disconnect();
}
console.log(ok ? '\nall targets met (against the parallel react baseline)' : '\nsome targets missed (against the parallel react baseline)');
process.exitCode = ok ? 0 : 1;
