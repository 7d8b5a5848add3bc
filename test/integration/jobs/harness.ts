// An in-process ThinkFlow service (API + worker) on real Redis and Docker,
// driven by a replay model serving the test's own transcripts.
import { startService, type ServiceHandle } from '../../../services/main/index.ts';
import { startReplayModel, type ReplayModel } from '../../../services/replay-model/server.ts';
import type { TranscriptInput } from '../../../services/replay-model/transcript.ts';
import type { JobView } from '../../../services/jobs/job-schemas.ts';
import { cleanupPrefix, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from '../pipeline/helpers.ts';

export const WEBHOOK_SECRET = 'test-webhook-secret';

export interface Harness {
  url: string;
  /** The Redis key prefix: a second service on it shares the jobs. */
  prefix: string;
  model: ReplayModel;
  service: ServiceHandle;
  submit(body: Record<string, unknown>): Promise<{ job_id: string; session_id: string; status: string }>;
  job(id: string): Promise<JobView>;
  waitFinal(id: string, timeoutMs?: number): Promise<JobView>;
  ledger(sessionId: string): Promise<Array<Record<string, any>>>;
  file(sessionId: string, path: string): Promise<string | null>;
  close(): Promise<void>;
}

/** `key`: the API key the helpers send (when the service runs with THINKFLOW_API_KEYS). */
export async function startHarness(name: string, transcripts: TranscriptInput[], env: Record<string, string> = {}, key?: string): Promise<Harness> {
  const prefix = testPrefix(name);
  const sandboxes = sandboxPrefix(name);
  const model = await startReplayModel({ transcripts });
  const service = await startService(
    testConfig(prefix, {
      PORT: '0', THINKFLOW_SANDBOX_PREFIX: sandboxes, THINKFLOW_POLICY_DIR: 'policies',
      OPENAI_BASE_URL: model.baseUrl, THINKFLOW_MODEL: 'scripted', THINKFLOW_WEBHOOK_SECRET: WEBHOOK_SECRET, ...env,
    }),
    {},
  );
  const url = service.url!;
  const auth: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  const json = async (res: Response) => {
    if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
    return res.json();
  };
  const h: Harness = {
    url, prefix, model, service,
    submit: async (body) => json(await fetch(`${url}/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: JSON.stringify(body) })),
    job: async (id) => json(await fetch(`${url}/v1/jobs/${id}`, { headers: auth })),
    async waitFinal(id, timeoutMs = 60_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const view = await h.job(id);
        if (['succeeded', 'failed', 'cancelled'].includes(view.status)) return view;
        if (Date.now() > until) throw new Error(`job ${id} still ${view.status} after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    ledger: async (sid) => (await json(await fetch(`${url}/v1/sessions/${sid}/ledger`, { headers: auth }))).entries,
    async file(sid, path) {
      const res = await fetch(`${url}/v1/sessions/${sid}/files/${path}`, { headers: auth });
      return res.status === 404 ? null : res.text();
    },
    async close() {
      await service.close();
      await model.close();
      await cleanupPrefix(prefix);
      await removeSandboxes(sandboxes);
    },
  };
  return h;
}

/** The text of the last user message of model request `n` (0-based). */
export function lastUserMessage(model: ReplayModel, n: number): string {
  const messages = model.log[n]!.messages;
  const last = [...messages].reverse().find((m) => m.role === 'user');
  return typeof last?.content === 'string' ? last.content : '';
}
