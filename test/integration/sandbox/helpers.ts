import Docker from 'dockerode';
import { afterAll, beforeAll } from 'vitest';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from '../../../services/protocol/command.ts';
import { SandboxManager, type PauseListener, type Sandbox, type SandboxOptions } from '../../../services/sandbox/index.ts';

export const docker = new Docker();
export const IMAGE = process.env.THINKFLOW_SANDBOX_IMAGE ?? 'thinkflow/sandbox:latest';

const IMAGE_DIR = fileURLToPath(new URL('../../../sandbox-image/', import.meta.url));

/** The inputs hash build.sh would put on an image built now (its bundler, the executor's runtime, the files). */
export function expectedInputsHash(): string {
  return execFileSync('bash', [path.join(IMAGE_DIR, 'build.sh'), '--print-hash'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** Fails loudly (instead of with a confusing 404 mid-test) when the image was never built or is stale. */
export async function requireImage(): Promise<void> {
  let labels: Record<string, string> | undefined;
  try {
    labels = (await docker.getImage(IMAGE).inspect()).Config.Labels ?? {};
  } catch {
    throw new Error(`sandbox image ${IMAGE} is missing: run \`npm run sandbox:image\` (or .ci/run) before these tests`);
  }
  if (!process.env.THINKFLOW_SANDBOX_IMAGE && labels['thinkflow.inputs-hash'] !== expectedInputsHash()) {
    throw new Error(`sandbox image ${IMAGE} is older than sandbox-image/: run \`npm run sandbox:image\``);
  }
}

/** A name prefix of its own per test file, so reaping in one file never touches another's (or a developer's) containers. */
export function testPrefix(tag: string): string {
  return `tft-${tag}-${randomBytes(3).toString('hex')}-`;
}

export function sessionId(): string {
  return `ses_${randomBytes(8).toString('hex')}`;
}

/** A manager of its own prefix; without spare images unless asked (tests count a prefix's images; spare-images.test.ts covers them). */
export function newManager(prefix: string, options: SandboxOptions & { onPause?: PauseListener } = {}): SandboxManager {
  return new SandboxManager({ namePrefix: prefix, reapIntervalMs: 0, image: IMAGE, workspaceSpares: 0, ...options, docker });
}

let seq = 0;
/** Shorthand: a Command with a fresh id and need_result false. */
export function cmd(partial: Partial<Command> & Pick<Command, 'tool'>): Command {
  return { id: String(++seq), need_result: false, ...partial };
}

export const bash = (sb: Sandbox, script: string, extra: Partial<Command> = {}) => sb.execute(cmd({ tool: 'bash', cmd: script, ...extra }));

/** Where the service keeps workspace images unless told otherwise (SandboxOptions.workspaceDir). */
export const WORKSPACE_DIR = '/var/lib/thinkflow/workspaces';

/** Workspace images and the loop devices attached to them, under a name prefix. */
export function hostLeftovers(prefix: string, dir = WORKSPACE_DIR): { images: string[]; loops: string[] } {
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    // no image was ever made on this host
  }
  const images = names.filter((n) => n.startsWith(prefix));
  const loops = execFileSync('losetup', ['--list', '--noheadings', '--raw', '--output', 'NAME,BACK-FILE'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(`${dir}/${prefix}`))
    .map((l) => l.split(' ')[0]!);
  return { images, loops };
}

/** Where the service keeps the sessions' egress directories unless told otherwise (SandboxOptions.egressDir). */
export const EGRESS_DIR = '/var/lib/thinkflow/egress';

/** Egress directories under a name prefix. */
export function egressLeftovers(prefix: string, dir = EGRESS_DIR): string[] {
  try {
    return readdirSync(dir).filter((n) => n.startsWith(prefix));
  } catch {
    return []; // no session was ever opened on this host
  }
}

/** Every container, volume, workspace image, loop device and egress directory left under a prefix (the afterAll assertion of each file). */
export async function leftovers(prefix: string): Promise<{ containers: string[]; volumes: string[]; images: string[]; loops: string[]; egress: string[] }> {
  const containers = (await docker.listContainers({ all: true, filters: { label: ['thinkflow.managed=true'] } }))
    .flatMap((c) => c.Names.map((n) => n.replace(/^\//, '')))
    .filter((n) => n.startsWith(prefix));
  const volumes = ((await docker.listVolumes({ filters: { label: ['thinkflow.managed=true'] } })).Volumes ?? [])
    .map((v) => v.Name)
    .filter((n) => n.startsWith(prefix));
  return { containers, volumes, ...hostLeftovers(prefix), egress: egressLeftovers(prefix) };
}

/** afterAll body: the reaper removes everything of this file's sessions, and nothing is left. */
export async function reapAll(manager: SandboxManager, prefix: string): Promise<void> {
  await manager.reap({ liveSessions: new Set() });
  await manager.close();
  const left = await leftovers(prefix);
  if (left.containers.length + left.volumes.length + left.images.length + left.loops.length + left.egress.length > 0) {
    throw new Error(`reaper left behind ${JSON.stringify(left)}`);
  }
}

/** Runs a script as root inside the container, outside the executor: the operator's (or a fault's) hand, never a command's. */
export async function dockerExecRoot(container: string, script: string): Promise<string> {
  const exec = await docker.getContainer(container).exec({ Cmd: ['bash', '-c', script], User: '0:0', AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  const { PassThrough } = await import('node:stream');
  const out = new PassThrough();
  out.on('data', (c: Buffer) => chunks.push(c));
  docker.modem.demuxStream(stream, out, out);
  await new Promise<void>((resolve, reject) => {
    stream.on('end', () => resolve());
    stream.on('error', reject);
  });
  return Buffer.concat(chunks).toString('utf8');
}

/** One manager and one session's sandbox for a whole test file (set in beforeAll), reaped after it. */
export function sandboxForFile(tag: string, options: SandboxOptions = {}): { prefix: string; manager: SandboxManager; sb: Sandbox } {
  const file = { prefix: testPrefix(tag) } as { prefix: string; manager: SandboxManager; sb: Sandbox };
  beforeAll(async () => {
    await requireImage();
    file.manager = newManager(file.prefix, options);
    file.sb = await file.manager.sandboxFor(sessionId());
  });
  afterAll(() => reapAll(file.manager, file.prefix));
  return file;
}

/** Python lines that set `pid` to the executor's process id, as a command sees /proc (for probes of what a command can reach). */
export const EXECUTOR_PID_PY = `
def argv(pid):
    try:
        return open("/proc/%s/cmdline" % pid, "rb").read().split(b"\\0")[:2]
    except OSError:
        return []
executor = [p for p in filter(str.isdigit, os.listdir("/proc")) if argv(p) == [b"/opt/thinkflow/runtime/node", b"/opt/thinkflow/executor/main.mjs"]]
assert len(executor) == 1, executor
pid = executor[0]`;
