// The same task suite through the `thinkflow` and `react` flows on the built-in
// replay model: model calls, prompt/completion tokens (counted by the replay
// model with gpt-tokenizer, o200k_base) and wall time, side by side.
// Needs Redis, Docker and the sandbox image (scripts/setup-machine.sh).
// Run: npm run bench:flows
import { modelEndpoint } from '../../services/agent/model-client.ts';
import { loadConfig } from '../../services/config/env.ts';
import { JobRequest, type JobView } from '../../services/jobs/job-schemas.ts';
import { JobsService } from '../../services/jobs/jobs-service.ts';
import { WebhookSender } from '../../services/jobs/webhooks.ts';
import { createRuntime } from '../../services/pipeline/runtime.ts';
import { deleteByPattern } from '../../services/pipeline/redis.ts';
import { BUILTIN_TRANSCRIPTS, DEMO_TASK } from '../../services/replay-model/scenarios.ts';
import { startReplayModel } from '../../services/replay-model/server.ts';

const TASKS = [
  { name: 'web project skeleton (9 commands)', task: DEMO_TASK, multiFile: true, interruptions: 0 },
  { name: 'five-chapter text (7 commands)', task: 'Write a five-chapter short story, one file per chapter, with a table of contents.', multiFile: true, interruptions: 0 },
  { name: 'mid-way failure (4 + 2 commands)', task: 'Prepare the release notes for 1.1 and bump the version.', multiFile: false, interruptions: 1 },
];

const prefix = `tfbench${process.pid}`;
const sandboxPrefix = `tfbench${process.pid}-`;
const rt = await createRuntime(loadConfig({ ...process.env, THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_SANDBOX_PREFIX: sandboxPrefix, THINKFLOW_POLICY_DIR: 'policies' }));
const model = await startReplayModel({ transcripts: BUILTIN_TRANSCRIPTS });
const jobs = new JobsService({ redis: rt.redis, keys: rt.keys, pipeline: rt.pipeline, endpoint: modelEndpoint(model.baseUrl, undefined, 'thinkflow-replay', 'replay'), webhooks: new WebhookSender({ secret: 'bench' }) });
await jobs.start();

async function run(task: string, flow: 'thinkflow' | 'react'): Promise<JobView & { wall_ms: number }> {
  const t0 = performance.now();
  const submitted = await jobs.submit(JobRequest.parse({ task, flow, limits: { max_turns: 40 } }), null);
  await jobs.settled(submitted.job_id);
  const view = (await jobs.store.get(submitted.job_id))!.view;
  await rt.pipeline.deleteSession(view.session_id);
  return { ...view, wall_ms: performance.now() - t0 };
}

const rows: string[] = [];
let ok = true;
try {
  // One warm-up job so container start-up and JIT are not billed to the first row.
  await run(DEMO_TASK, 'thinkflow');
  console.log('task                               | flow      | status    | calls | prompt tok | completion tok | wall ms | prompt vs react');
  for (const t of TASKS) {
    const tf = await run(t.task, 'thinkflow');
    const re = await run(t.task, 'react');
    const ratio = tf.usage.prompt_tokens / re.usage.prompt_tokens;
    for (const [flow, v] of [['thinkflow', tf], ['react', re]] as const) {
      rows.push(`${t.name.padEnd(34)} | ${flow.padEnd(9)} | ${v.status.padEnd(9)} | ${String(v.api_calls).padStart(5)} | ${String(v.usage.prompt_tokens).padStart(10)} | ${String(v.usage.completion_tokens).padStart(14)} | ${v.wall_ms.toFixed(0).padStart(7)} | ${flow === 'thinkflow' ? `${(ratio * 100).toFixed(1)}%` : '100%'}`);
    }
    const minimum = 1 + t.interruptions;
    const pass = tf.status === 'succeeded' && re.status === 'succeeded' && tf.api_calls === minimum && (!t.multiFile || ratio <= 0.4);
    ok &&= pass;
    rows.push(`${''.padEnd(34)}   thinkflow calls ${tf.api_calls} (minimum ${minimum}), prompt tokens ${(ratio * 100).toFixed(1)}% of react${t.multiFile ? ' (target <= 40%)' : ''}: ${pass ? 'PASS' : 'FAIL'}`);
    console.log(rows.splice(0).join('\n'));
  }
} finally {
  await jobs.close();
  await model.close();
  await rt.close();
  const { createRedis } = await import('../../services/pipeline/redis.ts');
  const r = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'bench-cleanup');
  await deleteByPattern(r, `${prefix}:*`);
  r.disconnect();
}
console.log(ok ? '\nall targets met' : '\nsome targets missed');
process.exitCode = ok ? 0 : 1;
