import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupPrefix, policyDir, REDIS_URL, sandboxPrefix, testPrefix } from '../integration/pipeline/helpers.ts';
import { serveChild } from './helpers.ts';

// /readyz is role-aware: Docker is needed where commands run, not by an
// API-only process. Real processes whose Docker engine is unreachable
// (DOCKER_HOST names a socket that does not exist).

const children: ChildProcess[] = [];
const prefix = testPrefix('ready');
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await cleanupPrefix(prefix);
});

describe('readiness by role', () => {
  it('without Docker: an API-only process is ready, a process that runs commands is 503 naming docker', async () => {
    const env = {
      REDIS_URL, THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_POLICY_DIR: policyDir(), THINKFLOW_SANDBOX_PREFIX: sandboxPrefix('ready'),
      DOCKER_HOST: 'unix:///nonexistent/docker.sock',
    };
    const [api, all] = await Promise.all([serveChild('api', env, children), serveChild('all', env, children)]);
    const apiReady = await fetch(`${api.url}/readyz`);
    expect(apiReady.status).toBe(200);
    expect(await apiReady.json()).toEqual({ status: 'ready', redis: true, docker: false, unavailable: [], reason: null });
    const allReady = await fetch(`${all.url}/readyz`);
    expect(allReady.status).toBe(503);
    expect(await allReady.json()).toEqual({
      status: 'not_ready', redis: true, docker: false, unavailable: ['docker'], reason: 'docker: the Docker engine does not answer',
    });
    for (const s of [api, all]) s.child.kill('SIGTERM');
    expect((await Promise.all([api.exited, all.exited])).map((e) => e.code)).toEqual([0, 0]);
  }, 60_000);
});
