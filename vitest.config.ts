import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup-logs.ts'],
    // THINKFLOW_TEST_REDIS=cluster: the tests on the shared Redis (REDIS_URL of
    // test/integration/pipeline/helpers.ts) run on a 3-master Redis Cluster
    // started on loopback for the run (test/integration/cluster/global-setup.ts).
    globalSetup: process.env.THINKFLOW_TEST_REDIS === 'cluster' ? ['test/integration/cluster/global-setup.ts'] : [],
    // Warm sandboxes (THINKFLOW_WARM_POOL, 2 by default) are off in the suites, so each service a test starts makes
    // no containers of its own accord; the warm pool's own tests turn it on (test/integration/sandbox/warm-pool.test.ts).
    env: { THINKFLOW_WARM_POOL: process.env.THINKFLOW_WARM_POOL ?? '0' },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration suites share one Docker engine and one Redis: run files one at a time.
    fileParallelism: false,
  },
});
