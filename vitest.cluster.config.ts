import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.ts';

// The same test files against a 3-master Redis Cluster started on loopback
// (test/integration/cluster/global-setup.ts): `npm run test:cluster [files]`.
// The files that start a redis-server of their own (memory limits, fault
// injection) run on that one, as under the default config.
export default mergeConfig(base, defineConfig({
  test: {
    include: ['test/integration/pipeline/**/*.test.ts', 'test/integration/jobs/**/*.test.ts'],
    globalSetup: ['test/integration/cluster/global-setup.ts'],
    env: { THINKFLOW_TEST_REDIS: 'cluster' },
  },
}));
