// Composition of the model-driven part of an API process: the model endpoint
// (a real OpenAI-compatible one, or the built-in replay model when
// OPENAI_BASE_URL is unset), webhooks, and the JobsService.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { modelEndpoint, withIdleTimeout, type ModelEndpoint } from '../agent/index.ts';
import { JobsService, JobStore, WebhookSender } from '../jobs/index.ts';
import { BUILTIN_TRANSCRIPTS, REPLAY_MODEL_NAME, startReplayModel, Transcript, type ReplayModel, type TranscriptInput } from '../replay-model/index.ts';
import type { Logger } from '../log/index.ts';
import type { Runtime } from './runtime.ts';

export interface JobsRuntime {
  jobs: JobsService;
  endpoint: ModelEndpoint;
  replay: ReplayModel | null;
  close(): Promise<void>;
}

function extraTranscripts(file: string | null): TranscriptInput[] {
  if (!file) return [];
  const parsed = z.array(Transcript).safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) throw new Error(`THINKFLOW_REPLAY_SCRIPTS ${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

export async function startJobs(rt: Runtime, logger: Logger): Promise<JobsRuntime> {
  const { model, webhookSecret, webhookAllow, runnerTtlS, replayScripts } = rt.config;
  let replay: ReplayModel | null = null;
  let endpoint: ModelEndpoint;
  if (model.baseUrl) {
    // loadConfig refuses a base URL without a model name.
    endpoint = modelEndpoint(model.baseUrl, model.apiKey ?? undefined, model.name!, 'openai-compatible');
    logger.info(`thinkflow model: ${endpoint.model} at ${model.baseUrl}`);
  } else {
    replay = await startReplayModel({ transcripts: [...extraTranscripts(replayScripts), ...BUILTIN_TRANSCRIPTS] });
    endpoint = modelEndpoint(replay.baseUrl, undefined, REPLAY_MODEL_NAME, 'replay');
    logger.warn(`thinkflow model: OPENAI_BASE_URL is unset: using the BUILT-IN REPLAY MODEL (scripted demo transcripts) at ${replay.baseUrl}; jobs show model_source "replay"`);
  }
  endpoint = { ...endpoint, stream: withIdleTimeout(endpoint.stream, model.idleMs) };
  let secret = webhookSecret;
  if (!secret) {
    secret = randomBytes(32).toString('hex');
    logger.warn('thinkflow webhooks: THINKFLOW_WEBHOOK_SECRET is unset: signing with a random per-process key receivers cannot verify');
  }
  const store = new JobStore(rt.redis, rt.keys, rt.pipeline.retentionS);
  const webhooks = new WebhookSender({ secret, allow: webhookAllow, record: (id, d) => store.recordDelivery(id, d) });
  const jobs = new JobsService({ redis: rt.redis, keys: rt.keys, pipeline: rt.pipeline, endpoint, webhooks, runnerTtlS });
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
