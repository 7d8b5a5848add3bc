// Webhooks on job completion: the JSON body signed with HMAC-SHA256
// (`X-ThinkFlow-Signature: sha256=<hex>`), retried with exponential backoff,
// delivered in the background so a slow receiver never holds a job. Each
// attempt checks the destination again (webhook-destinations.ts), connects to
// the address that check resolved, never follows a redirect, and is recorded.
import { createHmac, randomUUID } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Duplex } from 'node:stream';
import type { WebhookDelivery } from './job-schemas.ts';
import { withIds } from '../log/index.ts';
import { parseWebhookAllow, resolveWebhook, type HostAddresses, type Resolved } from './webhook-destinations.ts';

/** One delivery attempt, as `GET /v1/jobs/:id/webhook-deliveries` shows it. */

export interface WebhookOptions {
  /** Key of the HMAC. @default process.env.THINKFLOW_WEBHOOK_SECRET */
  secret: string;
  /** Attempts in all. @default 6 */
  attempts?: number;
  /** Delay before the 2nd attempt, doubled each time. @default 500 */
  baseDelayMs?: number;
  /** Per-attempt timeout. @default 10000 */
  timeoutMs?: number;
  /** `THINKFLOW_WEBHOOK_ALLOW` as written. @default null (any destination but loopback, link-local, metadata) */
  allow?: string | null;
  /** Keeps each attempt for the deliveries route; must not throw. @default none */
  record?: (jobId: string, delivery: WebhookDelivery) => Promise<void>;
  /** DNS resolution, replaceable in tests. @default dns.lookup with all addresses */
  resolve?: (host: string) => Promise<{ address: string; family: number }[]>;
  /** This host's interface addresses, replaceable in tests. @default os.networkInterfaces(), read per check */
  interfaces?: HostAddresses;
  /** Opens the connection to the checked address (tests: never a real non-loopback one). @default node's own */
  dial?: (to: { address: string; family: 4 | 6; port: number }) => Duplex;
}

const SUBMIT_CHECK_MS = 2000;

export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export class WebhookSender {
  readonly #opts: Required<Omit<WebhookOptions, 'record' | 'resolve' | 'allow' | 'interfaces' | 'dial'>> & Pick<WebhookOptions, 'record' | 'resolve' | 'interfaces' | 'dial'>;
  readonly #allow: ReturnType<typeof parseWebhookAllow>;
  readonly #inflight = new Set<Promise<void>>();

  /** @throws Error naming a bad THINKFLOW_WEBHOOK_ALLOW entry */
  constructor(options: WebhookOptions) {
    const { allow, ...rest } = options;
    this.#opts = { attempts: 6, baseDelayMs: 500, timeoutMs: 10_000, ...rest };
    this.#allow = parseWebhookAllow(allow);
  }

  /** Checks a URL now (job submission): the refusal reason, or null when it may be used (or can only be known later). */
  async refusal(url: string): Promise<string | null> {
    // A slow resolver must not hold the submission: past the bound, the
    // delivery-time check decides (and a refusal then is a recorded failure).
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => { timer = setTimeout(() => resolve(null), SUBMIT_CHECK_MS); });
    const r = await Promise.race([this.#resolve(url), late]).finally(() => clearTimeout(timer));
    return r === null || r.ok || r.retryable ? null : r.reason;
  }

  /** Starts delivery and returns at once. */
  send(url: string, event: string, payload: unknown, jobId?: string): void {
    const p = this.#deliver(url, event, JSON.stringify(payload), jobId).finally(() => this.#inflight.delete(p));
    this.#inflight.add(p);
  }

  #resolve(url: string): Promise<Resolved> {
    return resolveWebhook(url, this.#allow, this.#opts.resolve, this.#opts.interfaces);
  }

  async #deliver(url: string, event: string, body: string, jobId?: string): Promise<void> {
    const delivery = randomUUID();
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'thinkflow-sandbox',
      'x-thinkflow-event': event,
      'x-thinkflow-delivery': delivery,
      'x-thinkflow-signature': signBody(this.#opts.secret, body),
    };
    const logger = withIds({ job_id: jobId }).child({ delivery, url: redactedUrl(url) });
    for (let attempt = 1; attempt <= this.#opts.attempts; attempt++) {
      const outcome = await this.#attempt(url, headers, body);
      const entry: WebhookDelivery = { attempt, at: new Date().toISOString(), ok: outcome.ok, ...outcome.detail };
      if (jobId && this.#opts.record) {
        await this.#opts.record(jobId, entry).catch((err: unknown) => logger.error({ err, attempt }, 'webhook attempt not recorded'));
      }
      if (outcome.ok) return;
      logger.warn({ attempt, reason: entry.error ?? `HTTP ${entry.status_code}` }, 'webhook attempt failed');
      if (outcome.final) return;
      if (attempt < this.#opts.attempts) await new Promise((r) => setTimeout(r, this.#opts.baseDelayMs * 2 ** (attempt - 1)));
    }
    logger.error({ attempts: this.#opts.attempts }, 'webhook not delivered: giving up');
  }

  /** One POST. `final`: retrying cannot help (a refused destination, a redirect). */
  async #attempt(url: string, headers: Record<string, string>, body: string): Promise<{ ok: boolean; final?: boolean; detail: { status_code?: number; error?: string } }> {
    const dest = await this.#resolve(url);
    if (!dest.ok) return { ok: false, final: !dest.retryable, detail: { error: dest.reason } };
    try {
      const res = await post(dest, headers, body, this.#opts.timeoutMs, this.#opts.dial);
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        return { ok: false, final: true, detail: { status_code: status, error: `redirect to ${res.headers.location ?? '?'} not followed` } };
      }
      return { ok: status >= 200 && status < 300, detail: { status_code: status } };
    } catch (err) {
      return { ok: false, detail: { error: (err as Error).message } };
    }
  }

  /** Waits for deliveries in flight (shutdown, tests). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#inflight]);
  }
}

/**
 * POSTs to the address the destination check resolved: the `lookup` hook
 * hands back that address whatever the name resolves to now, while the Host
 * header and TLS name stay the URL's. Redirects are never followed (node:http
 * does not follow them; the caller refuses 3xx).
 */
function post(dest: Extract<Resolved, { ok: true }>, headers: Record<string, string>, body: string, timeoutMs: number, dial?: WebhookOptions['dial']): Promise<IncomingMessage> {
  const pinned: LookupFunction = (_host, opts, cb) => {
    if ((opts as { all?: boolean }).all) (cb as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: dest.address, family: dest.family }]);
    else cb(null, dest.address, dest.family);
  };
  const { url } = dest;
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  // node:http uses createConnection only when no agent is given (a dialed socket is never pooled either).
  const connect = dial ? { createConnection: () => dial({ address: dest.address, family: dest.family, port }) } : {};
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, lookup: pinned, timeout: timeoutMs, ...connect }, (res) => {
      res.resume(); // the body is not needed; drain it so the socket can close
      res.on('end', () => resolve(res));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** The URL as logs show it: scheme, host and path; the query and credentials may carry a receiver's token. */
export function redactedUrl(raw: string): string {
  try {
    const u = new URL(raw);
    return `${u.protocol}//${u.host}${u.pathname}${u.search ? '?…' : ''}`;
  } catch (err) {
    return `(not a URL: ${(err as Error).message})`;
  }
}
