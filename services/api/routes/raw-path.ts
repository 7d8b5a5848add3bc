import type { Context, MiddlewareHandler, Next } from 'hono';
import { normalizeWorkspacePath } from '../../policy/index.ts';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';

// Request URLs are normalised (`..` segments resolved) before routing, so
// `/files/../../etc/passwd` would silently become another route. The files
// API must answer 403 for such paths, so it judges the *raw* request target
// that Node received, encoded or not.

const FILES = /^\/v1\/sessions\/[^/?#]+\/files(?:\/([^?#]*))?/;

// Every request-target form reaches the same guard: an absolute-form target
// (`GET http://host/v1/…`, which HTTP/1.1 servers must accept) is reduced to
// its path, and repeated leading slashes to one.
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;

function rawTarget(c: Context): string {
  const env = c.env as { incoming?: { url?: string } } | undefined;
  const raw = env?.incoming?.url ?? new URL(c.req.url).pathname;
  return raw.replace(ABSOLUTE_FORM, '').replace(/^\/{2,}/, '/');
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new AppError(400, 'invalid_path', 'path has a malformed percent-encoding');
  }
}

// A target the router takes for a files route although its raw form does
// not read as one (`/v1/./sessions/S/files/..%2f..`): dot segments before
// the files path would make the raw reading and the routed one differ.
function filesMatch(c: Context): RegExpExecArray | null {
  const m = FILES.exec(rawTarget(c));
  if (!m && FILES.test(new URL(c.req.url).pathname)) {
    throw new AppError(400, 'invalid_path', 'a files request target must not contain dot segments before the file path');
  }
  return m;
}

/** The workspace path of a files request, decoded, from the raw target. */
export function filePathOf(c: Context): string {
  const m = filesMatch(c);
  return m ? decode(m[1] ?? '') : '';
}

/** Runs before routing: a raw files path that escapes the workspace is a 403, whatever route it would normalise to. */
export function guardRawFilePaths(): MiddlewareHandler<AppEnv> {
  return async function guardRawFilePaths(c: Context<AppEnv>, next: Next) {
    const m = filesMatch(c);
    if (m && c.req.method === 'GET') {
      const path = decode(m[1] ?? '');
      if (path !== '' && !normalizeWorkspacePath(path).ok) {
        throw new AppError(403, 'path_outside_workspace', 'path is outside the workspace', { details: { path } });
      }
    }
    return next();
  };
}
