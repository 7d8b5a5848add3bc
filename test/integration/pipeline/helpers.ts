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
    THINKFLOW_WORKER_IDLE_MS: '3000', ...extra,
  });
}

export async function cleanupPrefix(prefix: string, url = REDIS_URL): Promise<void> {
  const r = createRedis(url, 'tf-test-cleanup');
  try { await deleteByPattern(r, `${prefix}:*`); } finally { r.disconnect(); }
}
