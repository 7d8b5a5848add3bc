// Reads every import of services/ (static, `export … from`, dynamic) and
// reports the ones that break ARCHITECTURE.md's one-way order: a folder may
// import only folders of a lower layer, and only through their index.ts.
// `npx tsx scripts/check-imports.ts` prints the violations and exits 1 if any;
// test/unit/architecture/imports.test.ts runs the same check.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Lower number = lower layer. log and config are leaves; replay-model is a stand-alone server only main wires. */
export const LAYERS: Record<string, number> = {
  log: 0, config: 0,
  'replay-model': 1,
  protocol: 1,
  policy: 2,
  sandbox: 3,
  pipeline: 4,
  agent: 5,
  jobs: 6,
  dashboard: 7,
  api: 8,
  cli: 9,
  main: 10,
};

export type Violation = { file: string; target: string; why: string };

const IMPORT_RE = /(?:import|export)\s+(?:type\s+)?(?:[^'"]*?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) { if (name !== 'node_modules') out.push(...sourceFiles(p)); continue; }
    if (/\.(ts|mts)$/.test(name) && !/\.test\.ts$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** Every violation under `servicesDir`, or [] when the order holds. */
export function checkImports(servicesDir: string): Violation[] {
  const violations: Violation[] = [];
  for (const file of sourceFiles(servicesDir)) {
    const from = relative(servicesDir, file).split(sep)[0]!;
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(IMPORT_RE)) {
      const spec = m[1] ?? m[2]!;
      if (!spec.startsWith('.')) continue;
      const target = resolve(dirname(file), spec);
      const rel = relative(servicesDir, target).split(sep);
      const to = rel[0]!;
      const shown = relative(servicesDir, file);
      if (rel[0] === '..' || !(to in LAYERS)) {
        violations.push({ file: shown, target: spec, why: `imports outside the known folders (${to})` });
        continue;
      }
      if (!(from in LAYERS)) { violations.push({ file: shown, target: spec, why: `folder ${from} has no layer in scripts/check-imports.ts` }); continue; }
      if (to === from) continue;
      if (LAYERS[to]! >= LAYERS[from]!) violations.push({ file: shown, target: spec, why: `${from} (layer ${LAYERS[from]}) imports ${to} (layer ${LAYERS[to]}): only lower layers may be imported` });
      else if (rel.length !== 2 || !/^index\.(ts|mts)$/.test(rel[1]!)) violations.push({ file: shown, target: spec, why: `reaches into ${to}/ past its door: import ${to}/index.ts` });
    }
  }
  return violations;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'services');
  const found = checkImports(dir);
  for (const v of found) console.log(`${v.file}: ${v.target}: ${v.why}`);
  console.log(found.length ? `${found.length} violation(s)` : 'imports run one way');
  process.exit(found.length ? 1 : 0);
}
