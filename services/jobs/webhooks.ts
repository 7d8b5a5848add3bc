// Webhooks on job completion, delivered in the background so a slow receiver
// never holds a job. Each attempt is signed twice with HMAC-SHA256 under
// THINKFLOW_WEBHOOK_SECRET: `X-ThinkFlow-Signature: sha256=<hex of the body>`
// (kept for receivers written before), and `X-ThinkFlow-Signature-256:
// sha256=<hex of "<timestamp>.<body>">` with `X-ThinkFlow-Timestamp` (unix
// seconds, the attempt's own), so a receiver can refuse a captured delivery
// replayed later (the README's verifier: older than 5 minutes). One
// `X-ThinkFlow-Delivery` id per delivery, the same on its retries, lets it
// drop duplicates. Retries: exponential backoff with jitter (a 429's or 503's
// Retry-After is honoured up to the cap), a bounded number of attempts; a 2xx
// is delivered; a 4xx other than 408 and 429, a redirect or a refused
// destination ends the delivery (retrying cannot help). Each attempt checks
// the destination again (webhook-destinations.ts), connects to the address
// that check resolved, never follows a redirect, and is recorded.
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
  /** Delay before the 2nd attempt, doubled each time, each between half and all of it (jitter). @default 500 */
  baseDelayMs?: number;
  /** Longest delay between two attempts (also bounds a Retry-After). @default 30000 */
  maxDelayMs?: number;
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

/** `X-ThinkFlow-Signature`: the body alone (a replayed capture passes it; prefer the timestamped one). */
export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** `X-ThinkFlow-Signature-256`: `"<timestamp>.<body>"`, timestamp in unix seconds as sent in `X-ThinkFlow-Timestamp`. */
export function signTimestamped(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

type Outcome = { ok: boolean; final?: boolean; retryAfterMs?: number; detail: { status_code?: number; error?: string } };

export class WebhookSender {
  readonly #opts: Required<Omit<WebhookOptions, 'record' | 'resolve' | 'allow' | 'interfaces' | 'dial'>> & Pick<WebhookOptions, 'record' | 'resolve' | 'interfaces' | 'dial'>;
  readonly #allow: ReturnType<typeof parseWebhookAllow>;
  readonly #inflight = new Set<Promise<void>>();

  /** @throws Error naming a bad THINKFLOW_WEBHOOK_ALLOW entry */
  constructor(options: WebhookOptions) {
    const { allow, ...rest } = options;
    this.#opts = { attempts: 6, baseDelayMs: 500, maxDelayMs: 30_000, timeoutMs: 10_000, ...rest };
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
    const logger = withIds({ job_id: jobId }).child({ delivery, url: redactedUrl(url) });
    for (let attempt = 1; attempt <= this.#opts.attempts; attempt++) {
      const outcome = await this.#attempt(url, this.#headers(event, delivery, body), body);
      const entry: WebhookDelivery = { delivery_id: delivery, attempt, at: new Date().toISOString(), ok: outcome.ok, ...outcome.detail };
      if (jobId && this.#opts.record) {
        await this.#opts.record(jobId, entry).catch((err: unknown) => logger.error({ err, attempt }, 'webhook attempt not recorded'));
      }
      if (outcome.ok) return;
      logger.warn({ attempt, reason: entry.error ?? `HTTP ${entry.status_code}` }, 'webhook attempt failed');
      if (outcome.final) return;
      if (attempt < this.#opts.attempts) await new Promise((r) => setTimeout(r, this.#delayAfter(attempt, outcome.retryAfterMs)));
    }
    logger.error({ attempts: this.#opts.attempts }, 'webhook not delivered: giving up');
  }

  /** Signed now: each attempt carries its own timestamp, so a slow retry is not refused as a replay. */
  #headers(event: string, delivery: string, body: string): Record<string, string> {
    const timestamp = Math.floor(Date.now() / 1000);
    return {
      'content-type': 'application/json',
      'user-agent': 'thinkflow-sandbox',
      'x-thinkflow-event': event,
      'x-thinkflow-delivery': delivery,
      'x-thinkflow-timestamp': String(timestamp),
      'x-thinkflow-signature': signBody(this.#opts.secret, body),
      'x-thinkflow-signature-256': signTimestamped(this.#opts.secret, timestamp, body),
    };
  }

  /** Exponential, each between half and all of its step so retries of many jobs spread out; a Retry-After wins, up to the cap. */
  #delayAfter(attempt: number, retryAfterMs?: number): number {
    const step = Math.min(this.#opts.maxDelayMs, this.#opts.baseDelayMs * 2 ** (attempt - 1));
    const backoff = step / 2 + Math.random() * (step / 2);
    return Math.min(this.#opts.maxDelayMs, Math.max(backoff, retryAfterMs ?? 0));
  }

  /** One POST. `final`: retrying cannot help (a refused destination, a redirect, a 4xx other than 408 and 429). */
  async #attempt(url: string, headers: Record<string, string>, body: string): Promise<Outcome> {
    const dest = await this.#resolve(url);
    if (!dest.ok) return { ok: false, final: !dest.retryable, detail: { error: dest.reason } };
    try {
      const res = await post(dest, headers, body, this.#opts.timeoutMs, this.#opts.dial);
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        return { ok: false, final: true, detail: { status_code: status, error: `redirect to ${res.headers.location ?? '?'} not followed` } };
      }
      if (status >= 200 && status < 300) return { ok: true, detail: { status_code: status } };
      const final = status >= 400 && status < 500 && status !== 408 && status !== 429;
      const retryAfterMs = retryAfterOf(res.headers['retry-after']);
      return { ok: false, final, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}), detail: { status_code: status } };
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

/** `Retry-After` in seconds or as an HTTP date, in ms from now; undefined when absent or unreadable. */
function retryAfterOf(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (/^\d+$/.test(raw.trim())) return Number(raw.trim()) * 1000;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
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
