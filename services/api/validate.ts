import type { Context } from 'hono';
import type { z } from 'zod';
import { AppError } from './errors.ts';

/** zod issues → a compact, client-readable list. */
export function issuesOf(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((i) => ({ path: i.path.join('.') || '(root)', message: i.message }));
}

/** Reads a JSON body (empty = `{}` when `emptyOk`) and validates it: 400 with `error.code` otherwise. */
export async function readJson<S extends z.ZodType>(c: Context, schema: S, { emptyOk = false } = {}): Promise<z.infer<S>> {
  const type = c.req.header('content-type') ?? '';
  const text = await c.req.text();
  if (text.trim() === '' && emptyOk) return parseWith(schema, {});
  if (type && !/^application\/(.+\+)?json\b/i.test(type)) {
    throw new AppError(415, 'unsupported_media_type', `expected application/json, got ${type}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new AppError(400, 'invalid_json', `body is not valid JSON: ${(err as Error).message}`);
  }
  return parseWith(schema, value);
}

export function parseWith<S extends z.ZodType>(schema: S, value: unknown, code: 'invalid_body' | 'invalid_query' = 'invalid_body'): z.infer<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw new AppError(400, code, `${code === 'invalid_body' ? 'body' : 'query'} does not match the schema`, { details: issuesOf(r.error) });
  return r.data;
}
