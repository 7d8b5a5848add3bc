import type { Context, MiddlewareHandler, Next } from 'hono';
import type { z } from 'zod';
import { normalizeWorkspacePath } from '../policy/index.ts';
import { AppError } from './errors.ts';

// Request validation in the API's own words. The zod schemas live on the
// routes (openapi.ts) and @hono/zod-openapi runs them; what it reports goes
// through `validationHook`, so a bad body or query is a 400 in the one error
// shape, with the fields named.

/** zod issues → a compact, client-readable list. */
export function issuesOf(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((i) => ({ path: i.path.join('.') || '(root)', message: i.message }));
}

/** The `defaultHook` of the app: a failed check of the body or the query → 400 `invalid_body` / `invalid_query`. */
export function validationHook(result: { success: true } | { success: false; error: z.ZodError; target: string }): void {
  if (result.success) return;
  const code = result.target === 'json' ? 'invalid_body' : 'invalid_query';
  throw new AppError(400, code, `${code === 'invalid_body' ? 'body' : 'query'} does not match the schema`, { details: issuesOf(result.error) });
}

const JSON_TYPE = /^application\/(.+\+)?json\b/i;

/**
 * Reads a JSON body before the route's schema is checked: an empty body is
 * `{}` when `emptyOk`, another content type is a 415, bad JSON a 400
 * `invalid_json`; a body without a content type is read as JSON. The parsed
 * value is handed to the validator as a JSON request.
 */
export function jsonBody({ emptyOk = false } = {}): MiddlewareHandler {
  return async function jsonBody(c: Context, next: Next) {
    const type = c.req.header('content-type') ?? '';
    const text = await c.req.text();
    let value: unknown = {};
    if (!(text.trim() === '' && emptyOk)) {
      if (type && !JSON_TYPE.test(type)) throw new AppError(415, 'unsupported_media_type', `expected application/json, got ${type}`);
      try {
        value = JSON.parse(text);
      } catch (err) {
        throw new AppError(400, 'invalid_json', `body is not valid JSON: ${(err as Error).message}`);
      }
    }
    // The validator parses the cached text again: an empty body it must read as `{}`.
    const forwarded = text.trim() === '' && emptyOk ? '{}' : text;
    const raw = c.req.raw;
    const headers = new Headers(raw.headers);
    headers.set('content-type', 'application/json');
    c.req.raw = new Request(raw.url, { method: raw.method, headers, body: forwarded, signal: raw.signal });
    // hono types the cache by what it holds once read; it stores the promise
    (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(forwarded);
    c.req.bodyCache.json = Promise.resolve(value);
    await next();
  };
}

/** `?limit=`: a whole number from 1 to `max`, `fallback` when absent. */
export function limitOf(c: Context, max: number, fallback: number): number {
  const raw = c.req.query('limit') ?? String(fallback);
  const limit = Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > max) throw new AppError(400, 'invalid_query', `limit must be a whole number from 1 to ${max}, got '${raw}'`);
  return limit;
}

/** File paths of a request body (`files`) must stay inside the workspace: 400 `invalid_files` naming each. */
export function checkFilePaths(files: Record<string, string> | undefined): void {
  const bad = Object.keys(files ?? {}).map((path) => ({ path, n: normalizeWorkspacePath(path) })).filter((f) => !f.n.ok);
  if (!bad.length) return;
  throw new AppError(400, 'invalid_files', 'file paths must stay inside the workspace', {
    details: bad.map((b) => ({ path: b.path, reason: b.n.ok ? '' : b.n.reason })),
  });
}
