// The only module of policy/ that touches the file system: reads a policy
// directory, validates every YAML file under it (used or not) and hands out
// the layers for a project. One bad file anywhere fails the whole load.
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { PolicyLoadError, UnknownProjectError } from './errors.ts';
import { PolicyLayers } from './layers.ts';
import { parsePolicyDocument, type PolicyFile } from './parser.ts';

const POLICY_FILE = /\.ya?ml$/;

export class PolicyStore {
  constructor(
    readonly dir: string,
    readonly global: readonly PolicyFile[],
    readonly projects: ReadonlyMap<string, readonly PolicyFile[]>,
  ) {}

  // Indexed layers are reused: callers ask once per command, and a session's
  // own files are the same array each time (keyed weakly, so they can go).
  private readonly cache = new Map<string, { plain?: PolicyLayers; bySession: WeakMap<readonly PolicyFile[], PolicyLayers> }>();

  /** @throws UnknownProjectError when `project` has no folder under `projects/`. */
  layers(project?: string, session: readonly PolicyFile[] = []): PolicyLayers {
    let projectFiles: readonly PolicyFile[] = [];
    if (project !== undefined) {
      const files = this.projects.get(project);
      if (!files) throw new UnknownProjectError(project, [...this.projects.keys()].sort());
      projectFiles = files;
    }
    const key = project === undefined ? '' : `/${project}`;
    let slot = this.cache.get(key);
    if (!slot) this.cache.set(key, (slot = { bySession: new WeakMap() }));
    if (session.length === 0) return (slot.plain ??= new PolicyLayers(this.global, projectFiles, []));
    let layers = slot.bySession.get(session);
    if (!layers) slot.bySession.set(session, (layers = new PolicyLayers(this.global, projectFiles, session)));
    return layers;
  }
}

// Only "it is not there" reads as absent (no projects folder, a dangling
// link); any other failure (EACCES, EIO) is thrown, not taken for absence.
const ABSENT = new Set(['ENOENT', 'ENOTDIR']);
function absentAs<T>(value: T): (err: NodeJS.ErrnoException) => T {
  return (err) => {
    if (ABSENT.has(err.code ?? '')) return value;
    throw err;
  };
}
const statIfExists = (path: string) => stat(path).catch(absentAs(undefined));

/**
 * Loads `DIR/global/*.yaml` and `DIR/projects/<name>/*.yaml`; every other
 * `.yaml`/`.yml` under DIR is validated too and then ignored.
 * @throws PolicyLoadError naming each bad file (one per line)
 */
export async function loadPolicyDir(dir: string): Promise<PolicyStore> {
  const info = await statIfExists(dir);
  if (!info?.isDirectory()) throw new PolicyLoadError(`${dir}: policy directory not found`, dir);
  const global: PolicyFile[] = [];
  const projects = new Map<string, PolicyFile[]>();
  const projectsDir = join(dir, 'projects');
  for (const entry of await readdir(projectsDir, { withFileTypes: true }).catch(absentAs([]))) {
    const kind = entry.isSymbolicLink() ? await statIfExists(join(projectsDir, entry.name)) : entry;
    if (kind?.isDirectory()) projects.set(entry.name, []);
  }
  const errors: PolicyLoadError[] = [];
  for (const file of await walk(dir)) {
    const parts = relative(dir, file).split(sep);
    const project = parts.length === 3 && parts[0] === 'projects' ? parts[1] : undefined;
    const layer = project !== undefined ? 'project' : 'global';
    try {
      const parsed = parsePolicyDocument(file, await readFile(file, 'utf8'), layer);
      if (parts.length === 2 && parts[0] === 'global') global.push(parsed);
      else if (project !== undefined) projects.get(project)?.push(parsed);
    } catch (err) {
      errors.push(err instanceof PolicyLoadError ? err : new PolicyLoadError(`${file}: ${String(err)}`, file, { cause: err }));
    }
  }
  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1) {
    throw new PolicyLoadError(errors.map((e) => e.message).join('\n'), errors[0]!.file, { cause: errors });
  }
  return new PolicyStore(dir, global, projects);
}

/**
 * Every policy file under `dir`, sorted, so layer order is stable across
 * machines. Symlinks are followed (a Kubernetes ConfigMap mount is all
 * symlinks; skipping them would silently drop rules), each real directory once.
 */
async function walk(dir: string, seen = new Set<string>()): Promise<string[]> {
  const real = await realpath(dir);
  if (seen.has(real)) return [];
  seen.add(real);
  const out: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    const full = join(dir, e.name);
    const kind = e.isSymbolicLink() ? await statIfExists(full) : e;
    if (kind?.isDirectory()) out.push(...(await walk(full, seen)));
    else if (kind?.isFile() && POLICY_FILE.test(e.name)) out.push(full);
    else if (!kind && POLICY_FILE.test(e.name)) out.push(full); // dangling link: let the read fail loudly
  }
  return out;
}
