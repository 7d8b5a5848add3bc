// Maps errno codes to the stable error codes callers (and the model) see.
import { ToolError, WORKSPACE } from './paths.mjs';

const ERRNO = {
  ENOENT: 'not_found',
  EISDIR: 'is_directory',
  ENOTDIR: 'not_a_directory',
  EEXIST: 'already_exists',
  EACCES: 'permission_denied',
  EPERM: 'permission_denied',
  EROFS: 'permission_denied',
  // On a workspace that is its own filesystem, out of space means its quota; on a shared disk, the host's.
  ENOSPC: process.env.THINKFLOW_WORKSPACE_FS === 'loop' ? 'workspace_full' : 'no_space',
  EDQUOT: 'workspace_full',
  EFBIG: 'workspace_full',
  ENAMETOOLONG: 'bad_request',
  ELOOP: 'io_error',
};

/** Turns anything thrown by a tool into `{ error_code, error }`. */
export function toFailure(err) {
  if (err instanceof ToolError) return { error_code: err.code, error: err.message };
  const code = (err && ERRNO[err.code]) || 'io_error';
  const message = err && err.message ? String(err.message) : String(err);
  // Paths relative to the workspace, as the model wrote them.
  return { error_code: code, error: message.split(WORKSPACE + '/').join('') };
}
