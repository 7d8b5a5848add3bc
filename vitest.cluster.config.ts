import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.ts';

// The pipeline integration and jobs end-to-end test files against a 3-master
// Redis Cluster started on loopback (test/integration/cluster/global-setup.ts):
// `npm run test:cluster [files]`. The same as THINKFLOW_TEST_REDIS=cluster with
// the default config, limited to those files. The files that start a
// redis-server of their own (memory limits, a Redis restart) run on that one.
const config = mergeConfig(base, defineConfig({
  test: { include: ['test/integration/pipeline/**/*.test.ts', 'test/integration/jobs/**/*.test.ts'] },
}));
config.test!.globalSetup = ['test/integration/cluster/global-setup.ts'];
export default config;
