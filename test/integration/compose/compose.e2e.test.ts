// The offline compose stack as a newcomer runs it: `npm run compose:up`
// builds every image from the debootstrap base (no registry), starts Redis,
// one API without Docker and two workers, and the demo job runs through it;
// `compose:down` with DATA=1 leaves nothing of it behind. A project name,
// port, sandbox prefix and key of its own keep it apart from anything else.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_TASK } from '../../../services/replay-model/index.ts';

const run = promisify(execFile);
const tag = randomBytes(3).toString('hex');
const key = `tfk_${randomBytes(16).toString('hex')}`;
let url = '';
let env: NodeJS.ProcessEnv = {};

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers } });

const compose = (...args: string[]) => run('docker-compose', ['-p', env.THINKFLOW_COMPOSE_PROJECT!, '-f', 'docker-compose.yml', ...args], { env });

beforeAll(async () => {
  const port = await freePort();
  env = {
    ...process.env,
    THINKFLOW_COMPOSE_PROJECT: `tfct${tag}`,
    THINKFLOW_COMPOSE_PORT: String(port),
    THINKFLOW_SANDBOX_PREFIX: `tfct-${tag}-`,
    THINKFLOW_API_KEYS: `${key}:admin`,
  };
  url = `http://127.0.0.1:${port}`;
  await run('bash', ['scripts/compose.sh', 'up'], { env, timeout: 900_000 });
}, 900_000);

afterAll(async () => {
  if (!env.THINKFLOW_COMPOSE_PROJECT) return;
  await run('bash', ['scripts/compose.sh', 'down'], { env: { ...env, DATA: '1' }, timeout: 180_000 });
}, 180_000);

describe('docker-compose.yml', () => {
  it('is a valid compose file, and refuses to start without API keys', () => {
    expect(() => execFileSync('docker-compose', ['-f', 'docker-compose.yml', 'config', '-q'], { env, stdio: 'pipe' })).not.toThrow();
    const { THINKFLOW_API_KEYS: _, ...keyless } = env;
    expect(() => execFileSync('docker-compose', ['-f', 'docker-compose.yml', 'config', '-q'], { env: keyless, stdio: 'pipe' }))
      .toThrow(/THINKFLOW_API_KEYS/);
  });

  it('runs Redis with AOF and noeviction, and gives the Docker socket to the workers only', async () => {
    const ids = (await compose('ps', '-q')).stdout.trim().split('\n');
    const inspected = JSON.parse((await run('docker', ['inspect', ...ids])).stdout) as {
      Name: string; Mounts: { Source: string }[]; Config: { Cmd: string[]; User: string };
    }[];
    const byService = new Map(inspected.map((c) => [c.Name.replace(`/${env.THINKFLOW_COMPOSE_PROJECT}_`, '').replace(/_\d+$/, ''), c]));
    expect([...byService.keys()].sort()).toEqual(['api', 'redis', 'worker-1', 'worker-2']);
    const socket = (name: string) => byService.get(name)!.Mounts.some((m) => m.Source === '/var/run/docker.sock');
    expect([socket('api'), socket('redis'), socket('worker-1'), socket('worker-2')]).toEqual([false, false, true, true]);
    expect(byService.get('api')!.Config.User).toBe('65534:65534');
    const redisCmd = byService.get('redis')!.Config.Cmd.join(' ');
    expect(redisCmd).toContain('--appendonly yes');
    expect(redisCmd).toContain('--maxmemory-policy noeviction');
  });

  it('runs the demo job end to end through the API and a worker', async () => {
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    const submitted = await api('/v1/jobs', { method: 'POST', body: JSON.stringify({ task: DEMO_TASK }) });
    expect(submitted.status).toBe(202);
    const { job_id: jobId, session_id: sessionId } = (await submitted.json()) as { job_id: string; session_id: string };
    let job: { status: string; commands?: { succeeded?: number; total?: number } } = { status: 'queued' };
    for (let i = 0; i < 240 && !['succeeded', 'failed', 'cancelled'].includes(job.status); i++) {
      await new Promise((r) => setTimeout(r, 500));
      job = (await (await api(`/v1/jobs/${jobId}`)).json()) as typeof job;
    }
    expect(job.status).toBe('succeeded');
    const ledger = (await (await api(`/v1/sessions/${sessionId}/ledger`)).json()) as { entries: { status: string; path: string | null }[] };
    expect(ledger.entries.length).toBeGreaterThanOrEqual(9);
    expect(ledger.entries.every((e) => e.status === 'succeeded')).toBe(true);
    // The API has no Docker: the file comes from the session's workspace through a worker (over Redis).
    const file = await api(`/v1/sessions/${sessionId}/files/package.json`);
    expect(file.status).toBe(200);
    expect(JSON.parse(await file.text())).toMatchObject({ name: expect.any(String), devDependencies: { vite: expect.any(String) } });
    // The sandbox is the workers' (its own prefix), on this host's engine.
    const boxes = (await run('docker', ['ps', '-q', '--filter', `name=^${env.THINKFLOW_SANDBOX_PREFIX}`])).stdout.trim();
    expect(boxes).not.toBe('');
  });
});
