import type { Server } from 'node:http';
import { AppError } from '../api/index.ts';
import { log } from '../log/index.ts';

// The HTTP side of a graceful shutdown. On drain the server stops listening
// and closes its idle connections; the requests already in flight get the
// grace to be answered, with `connection: close`; a request that still
// reaches the app meanwhile is answered 503 `shutting_down`. A handler
// counts as in flight until it returned its Response: an SSE stream or a
// download still streaming its body then gets a short flush and is cut (a
// stream's client resumes elsewhere with Last-Event-ID).

type Fetch = (req: Request, env: unknown) => Response | Promise<Response>;

/** After the last in-flight answer, bodies still being written get this long. */
const FLUSH_MS = 1000;

export class HttpDrain {
  #inflight = 0;
  #draining = false;
  #idle: (() => void) | null = null;

  get draining(): boolean { return this.#draining; }
  get inflight(): number { return this.#inflight; }

  /** The app's fetch, counted, and refused once the drain began. */
  wrap(fetch: Fetch): Fetch {
    return async (req, env) => {
      if (this.#draining) return shuttingDown();
      this.#inflight += 1;
      try {
        const res = await fetch(req, env);
        // Answered during the drain: the client must not send its next request on this connection.
        if (this.#draining) closeAfter(res);
        return res;
      } finally {
        this.#inflight -= 1;
        if (this.#inflight === 0) this.#idle?.();
      }
    };
  }

  /** Stops accepting, waits up to `graceMs` for the requests in flight, then closes every connection. */
  async drain(server: Server, graceMs: number): Promise<void> {
    this.#draining = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    const deadline = Date.now() + graceMs;
    if (this.#inflight > 0) {
      log().info({ inflight: this.#inflight, grace_ms: graceMs }, 'http: draining the requests in flight');
      const idle = new Promise<void>((resolve) => { this.#idle = resolve; });
      await waitAtMost(idle, graceMs);
      if (this.#inflight > 0) log().warn({ inflight: this.#inflight }, 'http: shutdown grace over; the requests still in flight are cut');
    }
    server.closeIdleConnections();
    await waitAtMost(closed, Math.max(0, Math.min(FLUSH_MS, deadline - Date.now())));
    server.closeAllConnections();
    await closed;
  }
}

function closeAfter(res: Response): void {
  try {
    res.headers.set('connection', 'close');
  } catch {
    // Immutable headers (a Response passed through from fetch): the server's close still ends the connection after it.
  }
}

function shuttingDown(): Response {
  const body = new AppError(503, 'shutting_down', 'this process is shutting down: retry (another instance may answer)').toBody();
  return new Response(JSON.stringify(body), { status: 503, headers: { 'content-type': 'application/json', connection: 'close', 'retry-after': '1' } });
}

async function waitAtMost(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise<void>((r) => { timer = setTimeout(r, ms); })]);
  clearTimeout(timer);
}
