// Workspace path normalisation: the hard invariant of POLICY.md §1 in pure form.
// Exported for the sandbox and the API so all three refuse the same paths.
// Symlinks cannot be judged without the file system; the sandbox checks those.

export const WORKSPACE_ROOT = '/workspace';
export const OUTSIDE = 'path_outside_workspace';
export const MAX_PATH_CHARS = 4096;

export type NormalizedPath = { ok: true; path: string } | { ok: false; reason: string };

/**
 * Turns a path as a model or client wrote it into a workspace-relative path
 * with no `.`, `..`, empty segments or trailing slash. The workspace root
 * itself is `"."`.
 *
 * @example normalizeWorkspacePath('./src//a/../b.ts') // { ok: true, path: 'src/b.ts' }
 * @example normalizeWorkspacePath('/etc/passwd')       // { ok: false, reason: 'path_outside_workspace: ...' }
 */
export function normalizeWorkspacePath(p: string): NormalizedPath {
  if (p.length === 0) return { ok: false, reason: 'empty_path: a path is required' };
  // PATH_MAX: no longer path can be opened, and rule globs are matched against it.
  if (p.length > MAX_PATH_CHARS) return { ok: false, reason: `invalid_path: ${p.length} characters (at most ${MAX_PATH_CHARS})` };
  if (p.includes('\0')) return { ok: false, reason: `invalid_path: ${JSON.stringify(p)} contains a NUL byte` };
  const absolute = p.startsWith('/');
  const stack: string[] = [];
  for (const seg of p.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      // Above the root: relative paths escape the workspace; absolute ones
      // stay at "/" like the kernel does, and are judged below.
      if (stack.length === 0) {
        if (!absolute) return outside(p);
        continue;
      }
      stack.pop();
      continue;
    }
    stack.push(seg);
  }
  if (absolute) {
    // Only /workspace and what lies under it, compared after `..` is resolved
    // so that /workspace/../etc is caught.
    if (stack[0] !== WORKSPACE_ROOT.slice(1)) return outside(p);
    stack.shift();
  }
  return { ok: true, path: stack.length ? stack.join('/') : '.' };
}

function outside(p: string): NormalizedPath {
  return { ok: false, reason: `${OUTSIDE}: ${JSON.stringify(p)} resolves outside ${WORKSPACE_ROOT}` };
}
