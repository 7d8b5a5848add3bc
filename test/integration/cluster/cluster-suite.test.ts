import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// The acceptance of issue 22's cluster part, in CI: the pipeline integration
// and jobs end-to-end test files below run unchanged against a 3-master Redis
// Cluster started on loopback (a child vitest with vitest.cluster.config.ts,
// whose global setup starts and stops the cluster). All of them take about 9
// minutes on the cluster (order.test.ts alone 2.5); this set, about 3, covers
// every script, the BullMQ queues, approvals, jobs, steering, recovery and a
// second worker process. The files that start a redis-server of their own
// (bounded-redis, store-budget, h9, fault's Redis restart) run on that one.
// `npm run test:cluster` runs every pipeline and jobs file that way.

const ROOT = new URL('../../../', import.meta.url).pathname;
export const CLUSTER_CI_FILES = [
  'test/integration/pipeline/core.test.ts',
  'test/integration/pipeline/enqueue-guard.test.ts',
  'test/integration/pipeline/api.test.ts',
  'test/integration/pipeline/approvals.test.ts',
  'test/integration/pipeline/event-log.test.ts',
  'test/integration/pipeline/handover.test.ts',
  'test/integration/pipeline/index-repair.test.ts',
  'test/integration/pipeline/multi-worker.test.ts',
  'test/integration/jobs/jobs.e2e.test.ts',
  'test/integration/jobs/recovery.e2e.test.ts',
  'test/integration/jobs/steering.e2e.test.ts',
];

type Report = { numPassedTests: number; numFailedTests: number; numTotalTests: number; testResults: { name: string; status: string; message: string }[] };

function runOnCluster(files: string[], out: string): Promise<{ code: number | null; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, THINKFLOW_TEST_REDIS: 'cluster' };
  delete env.REDIS_URL; // the child's global setup starts the cluster and sets it
  delete env.VITEST; delete env.VITEST_WORKER_ID; delete env.VITEST_POOL_ID;
  const child = spawn(process.execPath, [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.cluster.config.ts',
    '--reporter=json', `--outputFile=${out}`, ...files], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-20_000); });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
}

describe('on a 3-master Redis Cluster (loopback)', () => {
  it('the pipeline integration and jobs end-to-end tests pass', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tf-cluster-run-'));
    try {
      const out = join(dir, 'report.json');
      const { code, stderr } = await runOnCluster(CLUSTER_CI_FILES, out);
      const report = JSON.parse(readFileSync(out, 'utf8')) as Report;
      const failed = report.testResults.filter((r) => r.status !== 'passed').map((r) => `${r.name}: ${r.message.slice(0, 2000)}`);
      expect(failed, stderr.slice(-4000)).toEqual([]);
      expect(report.numFailedTests).toBe(0);
      expect(report.numPassedTests).toBeGreaterThanOrEqual(CLUSTER_CI_FILES.length);
      expect(code).toBe(0);
      console.info(`cluster run: ${report.numPassedTests}/${report.numTotalTests} tests passed in ${CLUSTER_CI_FILES.length} files`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 20 * 60_000);
});
