import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup-logs.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration suites share one Docker engine and one Redis: run files one at a time.
    fileParallelism: false,
  },
});
