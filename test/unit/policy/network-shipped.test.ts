// The shipped policies stay closed to the network, and the worked example in
// policies/README.md (a project opening the npm registry) does what it says.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { evaluateConnection, loadPolicyDir, parsePolicyDocument, PolicyLayers } from '../../../services/policy/index.ts';

const POLICIES = fileURLToPath(new URL('../../../policies/', import.meta.url));

/** The commented YAML block of the README's network section, uncommented. */
async function workedExample(): Promise<string> {
  const readme = await readFile(`${POLICIES}README.md`, 'utf8');
  const block = /## Network egress[\s\S]*?```yaml\n([\s\S]*?)```/.exec(readme)?.[1];
  if (block === undefined) throw new Error('policies/README.md: no yaml block in the network section');
  return block.replace(/^# ?/gm, '');
}

describe('network egress and the shipped policies', () => {
  it('forbid every connection, in the global layer and in the example project', async () => {
    const store = await loadPolicyDir(POLICIES);
    for (const layers of [store.layers(), store.layers('example')]) {
      expect(layers.networkRules()).toEqual([]);
      expect(layers.defaultFor('network')).toEqual({ decision: 'forbid', layer: 'builtin', files: [] });
      for (const host of ['registry.npmjs.org', 'github.com', '8.8.8.8', '[::1]']) {
        expect(evaluateConnection(layers, { host, port: 443 }).decision).toBe('forbid');
      }
    }
  });

  it('open the registry for one project with the README’s worked example, and nothing else', async () => {
    const store = await loadPolicyDir(POLICIES);
    const project = parsePolicyDocument('projects/web/50-network.yaml', await workedExample(), 'project');
    const layers = new PolicyLayers(store.global, [project], []);
    expect(evaluateConnection(layers, { host: 'registry.npmjs.org', port: 443 })).toEqual({
      decision: 'allow',
      matched_rules: [{ id: 'npm-registry', layer: 'project', decision: 'allow', justification: 'npm install fetches packages' }],
      reason: 'allow by rule npm-registry (project) for `registry.npmjs.org:443`: npm install fetches packages',
    });
    expect(evaluateConnection(layers, { host: 'registry.npmjs.org', port: 80 }).decision).toBe('forbid');
    expect(evaluateConnection(layers, { host: 'registry.npmjs.org', port: 443, address: '10.0.0.8' }).decision).toBe('forbid');
    expect(evaluateConnection(store.layers('example'), { host: 'registry.npmjs.org', port: 443 }).decision).toBe('forbid');
  });
});
