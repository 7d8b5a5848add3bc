import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';

/**
 * Request body cap; over it → 413 in the usual error shape (checked on
 * Content-Length and again while streaming, so chunked bodies are capped too).
 * @example app.post('/v1/sessions', maxBody(2 * 1024 * 1024), handler)
 */
export function maxBody(maxSize: number): MiddlewareHandler<AppEnv> {
  return bodyLimit({
    maxSize,
    onError: () => {
      throw new AppError(413, 'payload_too_large', `request body over ${maxSize} bytes`, { details: { max_bytes: maxSize } });
    },
  }) as MiddlewareHandler<AppEnv>;
}
