// The REST API as the signed-in key sees it. The key lives in sessionStorage
// (this tab only) and always travels in the Authorization header, never in a
// URL, so it stays out of logs and history. Event streams are read with
// fetch() for the same reason (EventSource cannot send headers).

const STORE = 'thinkflow.key';

export const session = {
  get key() { return sessionStorage.getItem(STORE); },
  set(key) { sessionStorage.setItem(STORE, key); },
  clear() { sessionStorage.removeItem(STORE); },
};

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** Listeners for a key that stops working (401): the app signs out. */
export const onUnauthorized = new Set();

/** An error in words a person can act on. */
export function words(err) {
  if (!(err instanceof ApiError)) return `Could not reach the ThinkFlow API (${err.message}). Check that the server is running.`;
  if (err.status === 401) return 'The API key was not accepted: it is unknown, mistyped or no longer configured. Sign in again with a valid key.';
  if (err.status === 403) return `Not allowed with this key: ${err.message}.`;
  if (err.status === 404) return `Not found: ${err.message}.`;
  return err.message;
}

export async function api(path, { method = 'GET', body, raw = false } = {}) {
  // A header no cross-origin form can send: dev mode refuses browser writes without it.
  const headers = { authorization: `Bearer ${session.key}`, 'x-thinkflow-client': 'dashboard' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!res.ok) {
    let e = { code: 'http_' + res.status, message: res.statusText, details: null };
    try { e = (await res.json()).error ?? e; } catch { /* not JSON: keep the status text */ }
    const err = new ApiError(res.status, e.code, e.message, e.details);
    if (res.status === 401) for (const f of onUnauthorized) f(err);
    throw err;
  }
  return raw ? res : res.json();
}

/**
 * Reads a Server-Sent Events stream with the key in a header, reconnecting
 * after a drop with `Last-Event-ID` (when `resume`), with a growing delay.
 * `onEvent(type, data, id)`, `onStatus({state, attempt, error})`;
 * returns `stop()`. `done(type)` true ends the stream for good (e.g. job_finished).
 */
export function stream(path, { onEvent, onStatus = () => {}, resume = false, done = () => false }) {
  const ctl = { stopped: false, abort: null, lastId: null, attempt: 0 };
  const run = async () => {
    while (!ctl.stopped) {
      const abort = new AbortController();
      ctl.abort = abort;
      let finished = false;
      try {
        const headers = { authorization: `Bearer ${session.key}`, accept: 'text/event-stream' };
        if (resume && ctl.lastId !== null) headers['last-event-id'] = ctl.lastId;
        const res = await fetch(path, { headers, signal: abort.signal, cache: 'no-store' });
        if (!res.ok) {
          let e = { code: 'http_' + res.status, message: res.statusText };
          try { e = (await res.json()).error ?? e; } catch { /* keep status text */ }
          const err = new ApiError(res.status, e.code, e.message, e.details);
          if (res.status === 401) { for (const f of onUnauthorized) f(err); return; }
          if (res.status === 403 || res.status === 404) { onStatus({ state: 'failed', error: err }); return; }
          throw err;
        }
        onStatus({ state: 'live', attempt: ctl.attempt, resumedAfter: resume ? ctl.lastId : null });
        ctl.attempt = 0;
        finished = await read(res.body, (type, data, id) => {
          if (id !== null) ctl.lastId = id;
          onEvent(type, data, id);
          return done(type);
        });
        if (finished) { onStatus({ state: 'ended' }); return; }
        throw new Error('the server closed the stream');
      } catch (err) {
        if (ctl.stopped) return;
        ctl.attempt += 1;
        const delay = Math.min(10_000, 500 * 2 ** Math.min(ctl.attempt - 1, 5));
        onStatus({ state: 'reconnecting', attempt: ctl.attempt, delay, error: err });
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  };
  run();
  return () => { ctl.stopped = true; ctl.abort?.abort(); };
}

/** Parses an SSE body; resolves true when `handle` asked to stop, false at the end of the body. */
async function read(body, handle) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return false;
    buf += value.replace(/\r\n?/g, '\n');
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let type = 'message';
      let id = null;
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
        if (field === 'event') type = val;
        else if (field === 'data') data.push(val);
        else if (field === 'id') id = val;
      }
      if (data.length === 0) continue;
      let parsed;
      try { parsed = JSON.parse(data.join('\n')); } catch { parsed = data.join('\n'); }
      if (handle(type, parsed, id)) { reader.cancel().catch(() => {}); return true; }
    }
  }
}

/** Connection state in words, shared by every view. */
export function connectionWords(label, s) {
  if (s.state === 'live') {
    if (s.resumedAfter) return `${label}: live again (resumed after event ${s.resumedAfter})`;
    return s.attempt > 0 ? `${label}: live again (current state reloaded)` : `${label}: live`;
  }
  if (s.state === 'reconnecting') return `${label}: connection lost (${s.error?.message ?? 'network error'}); reconnecting in ${Math.round(s.delay / 100) / 10} s, attempt ${s.attempt}`;
  if (s.state === 'ended') return `${label}: finished`;
  if (s.state === 'failed') return `${label}: ${words(s.error)}`;
  return '';
}
