import type Docker from 'dockerode';
import type { Duplex, Readable } from 'node:stream';
import { PassThrough } from 'node:stream';
import { EXECUTOR_NODE } from './container-spec.ts';
import type { ExecutorClient } from './executor-client.ts';
import { sandboxLog } from './log.ts';
import type { ResolvedSandboxOptions } from './sandbox-options.ts';

// A tar (or tar.gz) stream into a session's workspace, all or nothing
// (README.md, "Workspace uploads"): the executor grants a lease on the
// session's execution slot and a staging directory; the bytes go straight
// from the caller's stream into `docker exec` of the extraction program
// (sandbox-image/executor/upload-extract.mjs, as the command user); each
// entry it reports is judged by `check` (the policy) while the rest streams;
// then the executor commits the judged list, or discards everything.

/** One archive entry as the extraction program saw it (its path is normalised, workspace-relative). */
export type UploadEntry = { path: string; kind: 'file' | 'dir' | 'symlink'; size: number; target?: string };
/** `written`: the files and links now in place, one per path (a later entry of the same name replaced an earlier one). */
export type UploadResult = { entries: UploadEntry[]; written: UploadEntry[]; files: number; bytes: number };
export type UploadRefusal = { code: string; message: string; details?: Record<string, unknown> };
export type UploadOptions = {
  /** Judges one entry before it can land; a refusal stops the upload with that error. */
  check(entry: UploadEntry): UploadRefusal | null;
};

export type UploadErrorCode =
  | 'session_busy' | 'invalid_archive' | 'workspace_full' | 'workspace_conflict' | 'upload_failed' | (string & {});

/** The upload was refused or failed; nothing of it is in the workspace. `entry` names the archive entry at fault. */
export class UploadError extends Error {
  constructor(readonly code: UploadErrorCode, message: string, readonly details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'UploadError';
  }
}

const EXTRACTOR = '/opt/thinkflow/executor/upload-extract.mjs';
/** How long an upload waits for the session's running command before it is `session_busy`. */
const LEASE_WAIT_MS = 2_000;
/** The executor drops a lease not touched for this long (a host process that died mid-upload). */
const LEASE_TTL_MS = 30_000;

type Line = { e?: UploadEntry; done?: { entries: number }; error?: { code: string; message: string; entry?: string } };
type Deps = { docker: Docker; container: Docker.Container; client: ExecutorClient; options: ResolvedSandboxOptions; sessionId: string };

export async function uploadArchive(d: Deps, body: Readable, opts: UploadOptions): Promise<UploadResult> {
  const t0 = performance.now();
  const limits = { workspaceQuotaBytes: d.options.workspaceQuotaBytes };
  const begun = await d.client.request<{ busy?: boolean; staging?: string; allowance?: number | 'none' }>(
    'uploadBegin', { wait_ms: LEASE_WAIT_MS, ttl_ms: LEASE_TTL_MS, limits }, LEASE_WAIT_MS + d.options.requestTimeoutMs,
  );
  if (begun.busy || !begun.staging) throw new UploadError('session_busy', 'a command is running in the session; upload when it is idle');
  const staging = begun.staging;
  const keepAlive = setInterval(() => {
    d.client.request('uploadTouch', { staging }, d.options.requestTimeoutMs)
      .catch((err: unknown) => sandboxLog(d.sessionId).warn({ err }, 'upload lease not renewed'));
  }, LEASE_TTL_MS / 3);
  let ended = false;
  try {
    const t1 = performance.now();
    const extracted = await extract(d, staging, begun.allowance ?? 'none', body, opts);
    const t2 = performance.now();
    ended = true;
    // A commit moves at most one name per entry; give it time by its size.
    const timeout = d.options.requestTimeoutMs + extracted.entries.length;
    const symlinks = extracted.written.filter((e) => e.kind === 'symlink').map((e) => e.path);
    const r = await d.client.request<{ committed?: boolean; failed?: { code: string; message: string; entry?: string } }>(
      'uploadEnd', { staging, commit: true, symlinks }, timeout,
    );
    if (r.failed) throw new UploadError(r.failed.code, r.failed.message, r.failed.entry !== undefined ? { entry: r.failed.entry } : {});
    const ms = (a: number, b: number) => Math.round(b - a);
    sandboxLog(d.sessionId).info({ entries: extracted.entries.length, bytes: extracted.bytes, lease_ms: ms(t0, t1), extract_ms: ms(t1, t2), commit_ms: ms(t2, performance.now()) }, 'workspace upload committed');
    return extracted;
  } finally {
    clearInterval(keepAlive);
    if (!ended) await discard(d, staging);
  }
}

async function discard(d: Deps, staging: string): Promise<void> {
  try {
    await d.client.request('uploadEnd', { staging, commit: false }, d.options.requestTimeoutMs);
  } catch (err) {
    // The lease still ends by itself after LEASE_TTL_MS, staging removed, extractor killed.
    sandboxLog(d.sessionId).warn({ err, staging }, 'upload: discarding the staged files failed; the executor drops them when the lease runs out');
  }
}

/** `argv` as the command user with no capability, like every command (identity.mjs), and a clean environment (`docker exec` as root otherwise). */
export function asCommandUser(o: Pick<ResolvedSandboxOptions, 'user'>, argv: string[]): string[] {
  const [uid, gid] = o.user.split(':');
  const drop = uid === '0' ? [] : ['setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--'];
  return [...drop, '/usr/bin/env', '-i', ...argv];
}

/** argv of the extraction program (as the command user). */
function extractorArgv(o: ResolvedSandboxOptions, staging: string, allowance: number | 'none'): string[] {
  return asCommandUser(o, [EXECUTOR_NODE, EXTRACTOR, `/workspace/${staging}`, String(allowance), String(o.workspaceInodes)]);
}

async function extract(d: Deps, staging: string, allowance: number | 'none', body: Readable, opts: UploadOptions): Promise<UploadResult> {
  const exec = await d.container.exec({
    Cmd: extractorArgv(d.options, staging, allowance), User: '0:0', WorkingDir: '/workspace', Env: [],
    AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: false,
  });
  const stream = (await exec.start({ hijack: true, stdin: true })) as unknown as Duplex;
  const out = new PassThrough();
  const errOut = new PassThrough();
  d.docker.modem.demuxStream(stream, out, errOut);
  let stderr = '';
  errOut.on('data', (c: Buffer) => { stderr = (stderr + c.toString('utf8')).slice(-2000); });
  return new Promise<UploadResult>((resolve, reject) => {
    const entries: UploadEntry[] = [];
    let settled = false;
    const stop = (err: Error | null, result?: UploadResult) => {
      if (settled) return;
      settled = true;
      body.unpipe(stream);
      stream.destroy();
      if (err) reject(err);
      else resolve(result!);
    };
    const onLine = (line: string) => {
      let msg: Line;
      try {
        msg = JSON.parse(line) as Line;
      } catch {
        return stop(new UploadError('upload_failed', `the extraction program wrote something unexpected: ${line.slice(0, 200)}`));
      }
      if (msg.e) {
        const refusal = opts.check(msg.e);
        if (refusal) return stop(new UploadError(refusal.code, refusal.message, { entry: msg.e.path, ...refusal.details }));
        entries.push(msg.e);
      } else if (msg.done) {
        stop(null, summarise(entries));
      } else if (msg.error) {
        stop(new UploadError(msg.error.code, msg.error.message, msg.error.entry !== undefined ? { entry: msg.error.entry } : {}));
      }
    };
    splitLines(out, onLine);
    // demuxStream never ends its outputs: without this a program that died without its
    // last line (killed, out of memory) would hold the upload, and the session, forever.
    stream.on('end', () => { out.end(); errOut.end(); });
    stream.on('close', () => { out.end(); errOut.end(); });
    out.on('end', () => stop(new UploadError('upload_failed', `the extraction program ended without a result${stderr ? `: ${stderr.trim().slice(-500)}` : ''}`)));
    stream.on('error', (err: Error) => stop(new UploadError('upload_failed', `the upload stream to the sandbox failed: ${err.message}`)));
    // The caller's body (e.g. over the size limit, or the client went away) ends the upload with its error.
    body.on('error', (err: Error) => stop(err));
    body.pipe(stream, { end: false });
    body.on('end', () => { if (!settled) stream.end(); });
  });
}

function summarise(entries: UploadEntry[]): UploadResult {
  const last = new Map<string, UploadEntry>();
  for (const e of entries) if (e.kind !== 'dir') last.set(e.path, e);
  const written = [...last.values()];
  return { entries, written, files: written.length, bytes: written.reduce((n, e) => n + e.size, 0) };
}

/** The program's lines are short (one entry each); a longer one is a fault, not something to buffer. */
const MAX_LINE = 64 * 1024;

function splitLines(s: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let rest = '';
  s.setEncoding('utf8');
  s.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop()!;
    for (const l of lines) if (l.trim() !== '') onLine(l);
    if (rest.length > MAX_LINE) {
      onLine(rest.slice(0, 200)); // not JSON: reported as unexpected output
      rest = '';
    }
  });
}
