import { startCluster, type TestCluster } from '../redis-cluster.ts';

// vitest.cluster.config.ts's global setup: unless REDIS_URL already names a
// cluster, starts a 3-master Redis Cluster on loopback and points REDIS_URL
// at it before any test file loads, so the shared test helpers
// (pipeline/helpers.ts: REDIS_URL) run every file on it; stops it after.

let cluster: TestCluster | null = null;

export async function setup(): Promise<void> {
  process.env.THINKFLOW_TEST_REDIS = 'cluster';
  if (process.env.REDIS_URL?.startsWith('redis+cluster://')) return;
  cluster = await startCluster();
  process.env.REDIS_URL = cluster.url;
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
  cluster = null;
}
