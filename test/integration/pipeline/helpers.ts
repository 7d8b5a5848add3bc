import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../../services/config/env.ts';
import { createRedis, deleteByPattern } from '../../../services/pipeline/redis.ts';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A unique key prefix per test file, so files never see each other's keys. */
export function testPrefix(name: string): string {
  return `tft-${name}-${process.pid}-${Math.random().toString(36).slice(2, 7)}`;
}

/** A policy dir: bash `rm` prompts, `curl` is forbidden, everything else per the built-ins. */
export function policyDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tf-policy-'));
  mkdirSync(join(dir, 'global'));
  mkdirSync(join(dir, 'projects', 'demo'), { recursive: true });
  writeFileSync(join(dir, 'global', 'base.yaml'), [
    'version: 1',
    'defaults:',
    '  bash: allow',
    'rules:',
    '  - id: no-curl',
    '    tool: bash',
    '    command: [["curl", "wget"]]',
    '    decision: forbid',
    '    justification: no network',
    '  - id: rm-asks',
    '    tool: bash',
    '    command: ["rm"]',
    '    decision: prompt',
    '    justification: deleting needs a human',
    '  - id: secrets',
    '    tool: [write, append, edit]',
    '    path: "secrets/**"',
    '    decision: prompt',
    '    justification: secrets need a human',
    '',
  ].join('\n'));
  writeFileSync(join(dir, 'projects', 'demo', 'p.yaml'), 'version: 1\nrules: []\n');
  return dir;
}

export function testConfig(prefix: string, extra: Record<string, string> = {}): Config {
  return loadConfig({
    REDIS_URL, THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_POLICY_DIR: policyDir(),
    THINKFLOW_WORKER_IDLE_MS: '3000',
    // A test's close() must not wait 30 s for a turn it left waiting (an approval nobody answers).
    THINKFLOW_SHUTDOWN_GRACE_S: '5',
    // Off unless a test asks (vitest.config.ts).
    THINKFLOW_WARM_POOL: process.env.THINKFLOW_WARM_POOL ?? '0',
    // A helper's own image build (PREAMBLE: THINKFLOW_SANDBOX_IMAGE=thinkflow/sandbox:NAME) reaches the service under test.
    ...(process.env.THINKFLOW_SANDBOX_IMAGE ? { THINKFLOW_SANDBOX_IMAGE: process.env.THINKFLOW_SANDBOX_IMAGE } : {}),
    ...extra,
  });
}

export async function cleanupPrefix(prefix: string, url = REDIS_URL): Promise<void> {
  const r = createRedis(url, 'tf-test-cleanup');
  try { await deleteByPattern(r, `${prefix}:*`); } finally { r.disconnect(); }
}

/** A unique Docker name prefix per test file; `removeSandboxes` deletes what it created. */
export function sandboxPrefix(name: string): string {
  return `tft-${name}-${Math.random().toString(36).slice(2, 7)}-`;
}

export async function removeSandboxes(prefix: string): Promise<void> {
  const { execFileSync } = await import('node:child_process');
  const ids = (kind: 'ps' | 'volume') =>
    execFileSync('docker', kind === 'ps' ? ['ps', '-aq', '--filter', `name=^/${prefix}`] : ['volume', 'ls', '-q', '--filter', `name=^${prefix}`])
      .toString().split('\n').filter(Boolean);
  const containers = ids('ps');
  if (containers.length) execFileSync('docker', ['rm', '-f', ...containers], { stdio: 'ignore' });
  const volumes = ids('volume');
  if (volumes.length) execFileSync('docker', ['volume', 'rm', '-f', ...volumes], { stdio: 'ignore' });
  // Each workspace is also an image file on a loop device (services/sandbox/workspace-fs.ts).
  const { readdirSync, rmSync } = await import('node:fs');
  const dir = '/var/lib/thinkflow/workspaces';
  let names: string[] = [];
  try { names = readdirSync(dir).filter((n) => n.startsWith(prefix)); } catch { /* no image made on this host */ }
  for (const name of names) {
    const devs = execFileSync('losetup', ['-n', '-O', 'NAME', '-j', `${dir}/${name}`], { encoding: 'utf8' }).split('\n').filter(Boolean);
    for (const dev of devs) execFileSync('losetup', ['-d', dev], { stdio: 'ignore' });
    rmSync(`${dir}/${name}`, { force: true });
  }
}

/** A small HTTP client for the API under test. */
export function client(base: string, key?: string) {
  const headers = (extra: Record<string, string> = {}) => ({ ...(key ? { authorization: `Bearer ${key}` } : {}), ...extra });
  return {
    get: (path: string) => fetch(`${base}${path}`, { headers: headers() }),
    del: (path: string) => fetch(`${base}${path}`, { method: 'DELETE', headers: headers() }),
    json: (path: string, body: unknown) => fetch(`${base}${path}`, {
      method: 'POST', headers: headers({ 'content-type': 'application/json' }), body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
    text: (path: string, body: string) => fetch(`${base}${path}`, {
      method: 'POST', headers: headers({ 'content-type': 'text/plain' }), body,
    }),
  };
}

/** A new session of the client's key (201 expected): its id. */
export async function newSession(c: ReturnType<typeof client>, body: unknown = {}): Promise<string> {
  const res = await c.json('/v1/sessions', body);
  if (res.status !== 201) throw new Error(`POST /v1/sessions answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { session_id: string }).session_id;
}

/** GET with a raw request target (fetch would normalise `..` away). */
export async function rawGet(base: string, target: string, key?: string): Promise<{ status: number; body: string }> {
  const { request } = await import('node:http');
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ agent: false, host: u.hostname, port: u.port, path: target, method: 'GET', headers: key ? { authorization: `Bearer ${key}` } : {} }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * POST that tolerates the server answering (413) before it read the whole body:
 * the response is what counts, a reset while still sending is expected.
 */
export async function rawPost(base: string, path: string, body: string | Buffer, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const { request } = await import('node:http');
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    let answered = false;
    // agent: false = a fresh connection, so no later request reuses one the server is closing.
    const req = request({ agent: false, host: u.hostname, port: u.port, path, method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      answered = true;
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', (err) => { if (!answered) reject(err); });
    req.on('socket', (sock) => sock.on('error', () => {}));
    req.end(body);
  });
}

const ROOT = new URL('../../../', import.meta.url).pathname;

/** `thinkflow serve --role worker` as a child process (tracked in `children`); resolves once it runs. */
export async function startWorker(env: Record<string, string>, children: import('node:child_process').ChildProcess[]) {
  const { spawn } = await import('node:child_process');
  const { join } = await import('node:path');
  const child = spawn(process.execPath, [join(ROOT, 'bin/thinkflow.mjs'), 'serve', '--role', 'worker'], {
    cwd: ROOT, env: { ...process.env, ...env, THINKFLOW_ROLE: 'worker' }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  return new Promise<typeof child>((resolve, reject) => {
    let log = '';
    child.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      if (log.includes('thinkflow worker running')) resolve(child);
    });
    child.on('exit', (code) => reject(new Error(`worker exited early (${code}): ${log}`)));
  });
}

export type SseEvent = { id: string | null; event: string; data: Record<string, any> };

/**
 * A raw Server-Sent Events client: reads `url` until `stop` holds for an
 * event (or the stream ends), then hangs up. Comments and keep-alives are skipped.
 */
export async function readSse(url: string, headers: Record<string, string>, stop: (e: SseEvent, all: SseEvent[]) => boolean): Promise<SseEvent[]> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) });
  if (!/^text\/event-stream/.test(res.headers.get('content-type') ?? '')) throw new Error(`${url}: not an event stream (${res.status})`);
  const out: SseEvent[] = [];
  let buf = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let cut: number;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const lines = buf.slice(0, cut).split('\n');
      buf = buf.slice(cut + 2);
      const field = (name: string) => lines.find((l) => l.startsWith(`${name}:`))?.slice(name.length + 1).trim() ?? null;
      if (!field('event')) continue;
      const e = { id: field('id'), event: field('event')!, data: JSON.parse(field('data')!) };
      out.push(e);
      if (stop(e, out)) return out; // leaving the loop cancels the body: the connection closes
    }
  }
  return out;
}
