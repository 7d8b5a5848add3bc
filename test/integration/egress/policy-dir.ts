import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A policy directory for egress tests: bash allowed (commands are not what
 * is tested), `defaults.network: forbid`, and these network rules (YAML flow
 * mappings, one per line) in the global layer.
 */
export function networkPolicyDir(rules: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'tf-egress-policy-'));
  mkdirSync(join(dir, 'global'));
  writeFileSync(join(dir, 'global', 'net.yaml'), ['version: 1', 'defaults: { bash: allow, network: forbid }', 'rules:', ...rules.map((r) => `  - ${r}`), ''].join('\n'));
  return dir;
}
