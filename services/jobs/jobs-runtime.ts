// Composition of the model-driven part of an API process: the model endpoint
// (a real OpenAI-compatible one, or the built-in replay model when
// OPENAI_BASE_URL is unset), webhooks, and the JobsService.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { modelEndpoint, type ModelEndpoint } from '../agent/model-client.ts';
import type { Runtime } from '../pipeline/runtime.ts';
import { BUILTIN_TRANSCRIPTS } from '../replay-model/scenarios.ts';
import { REPLAY_MODEL_NAME, startReplayModel, type ReplayModel } from '../replay-model/server.ts';
import { Transcript, type TranscriptInput } from '../replay-model/transcript.ts';
import { JobsService } from './jobs-service.ts';
import { WebhookSender } from './webhooks.ts';

export const ModelEnv = z.object({
  OPENAI_BASE_URL: z.string().url().optional(),
  OPENAI_API_KEY: z.string().optional(),
  THINKFLOW_MODEL: z.string().min(1).optional(),
  /** HMAC key of webhook signatures; unset = a random key per process (logged as a warning). */
  THINKFLOW_WEBHOOK_SECRET: z.string().min(1).optional(),
  /** Seconds without a heartbeat after which another API process fails a runner's unfinished jobs. */
  THINKFLOW_RUNNER_TTL_S: z.coerce.number().int().min(1).max(3600).default(20),
  /** A JSON file of extra replay transcripts (an array), served before the built-in ones. */
  THINKFLOW_REPLAY_SCRIPTS: z.string().optional(),
});

export interface JobsRuntime {
  jobs: JobsService;
  endpoint: ModelEndpoint;
  replay: ReplayModel | null;
  close(): Promise<void>;
}

function extraTranscripts(file: string | undefined): TranscriptInput[] {
  if (!file) return [];
  const parsed = z.array(Transcript).safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) throw new Error(`THINKFLOW_REPLAY_SCRIPTS ${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

export async function startJobs(rt: Runtime, env: Record<string, string | undefined>, log: (line: string) => void): Promise<JobsRuntime> {
  const parsed = ModelEnv.safeParse(env);
  if (!parsed.success) throw new Error(`invalid environment: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const e = parsed.data;
  let replay: ReplayModel | null = null;
  let endpoint: ModelEndpoint;
  if (e.OPENAI_BASE_URL) {
    endpoint = modelEndpoint(e.OPENAI_BASE_URL, e.OPENAI_API_KEY, e.THINKFLOW_MODEL ?? 'gpt-4.1', 'openai-compatible');
    log(`thinkflow model: ${endpoint.model} at ${e.OPENAI_BASE_URL}`);
  } else {
    replay = await startReplayModel({ transcripts: [...extraTranscripts(e.THINKFLOW_REPLAY_SCRIPTS), ...BUILTIN_TRANSCRIPTS] });
    endpoint = modelEndpoint(replay.baseUrl, undefined, REPLAY_MODEL_NAME, 'replay');
    log(`thinkflow model: OPENAI_BASE_URL is unset: using the BUILT-IN REPLAY MODEL (scripted demo transcripts) at ${replay.baseUrl}; jobs show model_source "replay"`);
  }
  let secret = e.THINKFLOW_WEBHOOK_SECRET;
  if (!secret) {
    secret = randomBytes(32).toString('hex');
    log('thinkflow webhooks: THINKFLOW_WEBHOOK_SECRET is unset: signing with a random per-process key receivers cannot verify');
  }
  const webhooks = new WebhookSender({ secret, log });
  const jobs = new JobsService({ redis: rt.redis, keys: rt.keys, pipeline: rt.pipeline, endpoint, webhooks, runnerTtlS: e.THINKFLOW_RUNNER_TTL_S, log });
  await jobs.start();
  let closing: Promise<void> | null = null;
  return {
    jobs, endpoint, replay,
    close() {
      closing ??= (async () => {
        await jobs.close();
        await replay?.close();
      })();
      return closing;
    },
  };
}
