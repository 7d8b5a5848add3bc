import { createKeys, createRedis, DockerSandboxes, takeWarm, WarmPool, warmSandboxesOf } from '../../../services/pipeline/index.ts';
import type { Sandbox, SandboxManager } from '../../../services/sandbox/index.ts';
import { cleanupPrefix, REDIS_URL } from '../pipeline/helpers.ts';
import { docker, sessionId } from './helpers.ts';

// Where the security suites (hardening.test.ts, isolation.test.ts) get their
// sandbox: made for the session when it is first used ("cold"), or made ahead
// by a warm pool and handed over with the pool's own LPOP ("pool", issue 23):
// each attack runs against both, so a pool container is proven as hardened.

export const SANDBOX_SOURCES = ['cold', 'pool'] as const;
export type SandboxSource = (typeof SANDBOX_SOURCES)[number];

/** The sandbox under test, and what to undo after its suite (the pool, its Redis keys). */
export async function sandboxFrom(source: SandboxSource, manager: SandboxManager, prefix: string): Promise<{ sb: Sandbox; close: () => Promise<void> }> {
  if (source === 'cold') return { sb: await manager.sandboxFor(sessionId()), close: async () => {} };
  const redis = createRedis(REDIS_URL, 'sandbox-source');
  const keys = createKeys(`${prefix}pool`);
  const pool = new WarmPool({ redis, keys, sandboxes: warmSandboxesOf(new DockerSandboxes(manager))!, processId: `${prefix}maker` }, { size: 1 });
  pool.start();
  await pool.filled(60_000);
  const taken = await takeWarm(redis, keys);
  if (!taken) throw new Error('the warm pool listed no id');
  const containerOf = async () => (await docker.listContainers({ filters: { label: [`thinkflow.session=${taken.sid}`] } })).map((c) => c.Id);
  const made = await containerOf();
  const sb = await manager.sandboxFor(taken.sid);
  // The id's sandbox is already open: sandboxFor hands over the warm container, it makes none.
  if (made.length !== 1 || (await containerOf()).join() !== made.join()) throw new Error(`not the warm container: ${made.join()} then ${(await containerOf()).join()}`);
  return {
    sb,
    close: async () => {
      await pool.close();
      await cleanupPrefix(`${prefix}pool`);
      redis.disconnect();
    },
  };
}
