// Webhooks on job completion: the JSON body signed with HMAC-SHA256
// (`X-ThinkFlow-Signature: sha256=<hex>`), retried with exponential backoff,
// delivered in the background so a slow receiver never holds a job.
import { createHmac, randomUUID } from 'node:crypto';

export interface WebhookOptions {
  /** Key of the HMAC. @default process.env.THINKFLOW_WEBHOOK_SECRET */
  secret: string;
  /** Attempts in all. @default 6 */
  attempts?: number;
  /** Delay before the 2nd attempt, doubled each time. @default 500 */
  baseDelayMs?: number;
  /** Per-attempt timeout. @default 10000 */
  timeoutMs?: number;
  log?: (line: string) => void;
}

export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export class WebhookSender {
  readonly #opts: Required<WebhookOptions>;
  readonly #inflight = new Set<Promise<void>>();

  constructor(options: WebhookOptions) {
    this.#opts = { attempts: 6, baseDelayMs: 500, timeoutMs: 10_000, log: () => {}, ...options };
  }

  /** Starts delivery and returns at once. */
  send(url: string, event: string, payload: unknown): void {
    const p = this.#deliver(url, event, JSON.stringify(payload)).finally(() => this.#inflight.delete(p));
    this.#inflight.add(p);
  }

  async #deliver(url: string, event: string, body: string): Promise<void> {
    const delivery = randomUUID();
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'thinkflow-sandbox',
      'x-thinkflow-event': event,
      'x-thinkflow-delivery': delivery,
      'x-thinkflow-signature': signBody(this.#opts.secret, body),
    };
    for (let attempt = 1; attempt <= this.#opts.attempts; attempt++) {
      try {
        const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(this.#opts.timeoutMs) });
        if (res.ok) return;
        this.#opts.log(`webhook ${delivery} to ${url}: HTTP ${res.status} (attempt ${attempt})`);
      } catch (err) {
        this.#opts.log(`webhook ${delivery} to ${url}: ${(err as Error).message} (attempt ${attempt})`);
      }
      if (attempt < this.#opts.attempts) await new Promise((r) => setTimeout(r, this.#opts.baseDelayMs * 2 ** (attempt - 1)));
    }
    this.#opts.log(`webhook ${delivery} to ${url}: giving up after ${this.#opts.attempts} attempts`);
  }

  /** Waits for deliveries in flight (shutdown, tests). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#inflight]);
  }
}
