import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkImports, FOLDERS } from '../../../scripts/check-imports.ts';

const REPO = resolve(import.meta.dirname, '../../..');
const made: string[] = [];
afterAll(() => { for (const dir of made) rmSync(dir, { recursive: true, force: true }); });

/** A throw-away repository holding `files`, plus the doors every fixture may use. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'tf-imports-'));
  made.push(root);
  const doors = Object.fromEntries(Object.keys(FOLDERS).map((f) => [`services/${f}/index.ts`, 'export {};']));
  for (const [path, text] of Object.entries({ ...doors, ...files })) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

/** `file:line why` of each violation, the reason cut at its first colon. */
const found = (root: string) => checkImports(root).map((v) => `${v.file}:${v.line} ${v.why.split(':')[0]}`).sort();

describe('one-way imports (ARCHITECTURE.md)', () => {
  it('the real services/, bench/, scripts/ and test/ have no violation', () => {
    expect(checkImports(REPO)).toEqual([]);
  });

  it('reports an upward import, a reach past the door, an unknown folder and a side service used by the wrong folder', () => {
    const root = tree({
      'services/protocol/command.ts': "import type { X } from '../pipeline/index.ts';",
      'services/pipeline/a.ts': "import { b } from '../policy/parser.ts';\nexport const a = await import('../protocol/index.ts');",
      'services/policy/parser.ts': "export type { Y } from '../nowhere/index.ts';\nexport * from '../replay-model/index.ts';",
      'services/main/wire.ts': "import { startReplayModel } from '../replay-model/index.ts';",
      'services/api/app.ts': "import { dashboardRoutes } from '../dashboard/index.ts';",
    });
    expect(found(root)).toEqual([
      'services/pipeline/a.ts:1 reaches into policy/ past its door',
      'services/policy/parser.ts:1 imports outside the known folders (nowhere)',
      'services/policy/parser.ts:2 replay-model may be imported only by main',
      'services/protocol/command.ts:1 protocol (layer 1) imports pipeline (layer 4)',
    ]);
  });

  it('catches the five tricks a regex missed', () => {
    const root = tree({
      'services/policy/template.ts': 'export const jobs = await import(`../jobs/index.ts`);',
      'services/policy/computed.ts': "const p = '../jobs/index.ts';\nexport const a = await import(p);\nexport const b = await import(`../${'jobs'}/index.ts`);",
      // Comments and strings are not code: only the real import on line 4 counts,
      // although it hides a comment inside its parentheses.
      'services/policy/commented.ts': [
        "// const old = await import('../jobs/index.ts');",
        "/* import { JobsService } from '../jobs/index.ts'; */",
        `export const text = "import('../jobs/index.ts')";`,
        "export const lazy = () => import(/* the jobs door */ '../jobs/index.ts');",
      ].join('\n'),
      'services/policy/create-require.ts': "import { createRequire as cr } from 'node:module';\nconst load = cr(import.meta.url);\nexport const jobs = load('../jobs/index.ts');",
      'services/policy/require.ts': "export const jobs = require('../jobs/index.ts');\nimport legacy = require('../log/index.ts');",
    });
    expect(found(root)).toEqual([
      'services/policy/commented.ts:4 policy (layer 2) imports jobs (layer 6)',
      'services/policy/computed.ts:2 import() of a computed target',
      'services/policy/computed.ts:3 import() of a computed target',
      'services/policy/create-require.ts:2 createRequire() in services/',
      'services/policy/create-require.ts:3 require() loads a module around this check',
      'services/policy/require.ts:1 require() loads a module around this check',
      'services/policy/require.ts:2 require() loads a module around this check',
      'services/policy/template.ts:1 policy (layer 2) imports jobs (layer 6)',
    ]);
  });

  it('reads type imports, `export … from` and JS modules', () => {
    const root = tree({
      'services/protocol/types.ts': "export type J = import('../jobs/index.ts').JobView;\nexport * from '../agent/index.ts';",
      'services/log/helper.mjs': "import { x } from '../config/index.ts';",
    });
    expect(found(root)).toEqual([
      'services/log/helper.mjs:1 log (layer 0) imports config (layer 0)',
      'services/protocol/types.ts:1 protocol (layer 1) imports jobs (layer 6)',
      'services/protocol/types.ts:2 protocol (layer 1) imports agent (layer 5)',
    ]);
  });

  it('holds bench/, scripts/ and test/ to the doors, except white-box tests and benchmarks of one folder', () => {
    const root = tree({
      'scripts/demo.ts': "import { follow } from '../services/cli/commands/submit.ts';\nimport { main } from '../services/cli/index.ts';",
      'bench/flows/run.ts': "import { SCENARIOS } from '../../services/replay-model/scenarios.ts';",
      'bench/sandbox/fs.ts': "import { cloneTemplate } from '../../services/sandbox/fs-template.ts';\nimport type { Command } from '../../services/protocol/command.ts';",
      'test/unit/pipeline/keys.test.ts': "import { createKeys } from '../../../services/pipeline/keys.ts';\nimport { loadConfig } from '../../../services/config/env.ts';",
      'test/unit/architecture/x.test.ts': "import { a } from '../../../services/policy/glob.ts';",
      'test/integration/jobs/harness.ts': "import { startReplayModel } from '../../../services/replay-model/server.ts';",
      'test/setup.ts': "import { log } from '../services/log/index.ts';\nimport { x } from '../services/gone/index.ts';\nimport { y } from './unit/pipeline/keys.test.ts';",
      // Outside services/ createRequire() may locate a file; loading one through it is still a require.
      'test/integration/browser.ts': "import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\nexport const axe = require.resolve('axe-core');\nexport const m = require('../../services/log/log.ts');",
    });
    expect(found(root)).toEqual([
      'bench/flows/run.ts:1 reaches into replay-model/ past its door',
      'bench/sandbox/fs.ts:2 reaches into protocol/ past its door',
      'scripts/demo.ts:1 reaches into cli/ past its door',
      'test/integration/browser.ts:4 require() loads a module around this check',
      'test/setup.ts:2 imports outside the known folders (services/gone)',
      'test/unit/architecture/x.test.ts:1 reaches into policy/ past its door',
      'test/unit/pipeline/keys.test.ts:2 reaches into config/ past its door',
    ]);
  });
});
