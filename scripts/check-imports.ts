// The one-way imports of ARCHITECTURE.md, read from the syntax tree of the
// TypeScript parser (ts.createSourceFile, no type checker, so it stays fast):
// comments and strings are never taken for imports, and no import the parser
// sees can hide from the check the way it could from a regex.
// `npx tsx scripts/check-imports.ts` prints the violations and exits 1 if any;
// test/unit/architecture/imports.test.ts runs the same check and plants the
// tricks a regex missed.
//
// Read as imports: `import … from`, `import type`, `export … from`, a type's
// `import('x').T`, and `import('x')` with a string or a template literal
// without `${}`. A load the check cannot judge is itself a violation:
// `import(expr)` or a template with `${}`, any `require(…)` (also under another
// name bound to `createRequire()`, and `import x = require()`), and in
// services/ any `createRequire()` at all. `require.resolve()` only finds a
// file, so it passes (the browser tests locate axe-core with it).
//
// The rules, by where the importing file lives (services/ test/ bench/ scripts/):
// - services/<F>/: F imports its own files freely, and another folder G only
//   when G's layer is lower than F's (FOLDERS below), only through
//   services/G/index.ts, and only if G has no `onlyFor` or F is that one user.
// - test/, bench/, scripts/: outside the layer order (any folder may be used),
//   but through its door, except code whose job is one folder's internals:
//   test/unit/<F>/ and bench/<F>/ may import services/<F>/'s own files (a unit
//   test or a benchmark of F), and test/integration/ may import any services/
//   file (it wires real parts of several folders against Redis and Docker).
//   Everything else — scripts/, bench/flows/, a test/unit/<F>/ file reaching
//   into another folder — goes through the door.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export type Folder = { layer: number; onlyFor?: string };

/** Lower layer = further down the one-way order; a folder imports only lower layers. */
export const FOLDERS: Record<string, Folder> = {
  log: { layer: 0 }, config: { layer: 0 },
  protocol: { layer: 1 },
  // Side services: they import only the leaves, and one user each wires them in:
  // the scripted model serves the model endpoint main gives the jobs, the
  // dashboard's routes are mounted by the API. No core layer may reach them.
  'replay-model': { layer: 1, onlyFor: 'main' },
  dashboard: { layer: 1, onlyFor: 'api' },
  policy: { layer: 2 },
  sandbox: { layer: 3 },
  pipeline: { layer: 4 },
  agent: { layer: 5 },
  jobs: { layer: 6 },
  api: { layer: 7 },
  cli: { layer: 8 },
  main: { layer: 9 },
};

/** The trees the check reads, relative to the repository root. */
export const ROOTS = ['services', 'bench', 'scripts', 'test'];

export type Violation = { file: string; line: number; target: string; why: string };

/** One module load found in a file; `spec` is null when its target is not a literal. */
export type ModuleRef = { spec: string | null; line: number; how: 'import' | 'require' | 'createRequire' };

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(p);
    return /\.(ts|mts|cts|js|mjs|cjs)$/.test(name) ? [p] : [];
  });
}

const literalText = (n: ts.Node | undefined): string | null =>
  n && (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) ? n.text : null;

const calleeName = (call: ts.CallExpression): string | null => {
  const e = call.expression;
  if (ts.isIdentifier(e)) return e.text;
  return ts.isPropertyAccessExpression(e) && e.name.text === 'createRequire' ? 'createRequire' : null;
};

/** Every module load in `text`, from its syntax tree (comments, strings and JSDoc are not code). */
export function moduleRefs(fileName: string, text: string): ModuleRef[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest);
  const refs: ModuleRef[] = [];
  const line = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
  // Calls by plain name are judged once the whole file is read: a name bound
  // to createRequire() may be declared after (or imported under an alias of) its use.
  const calls: Array<{ name: string; node: ts.CallExpression }> = [];
  const creators = new Set(['createRequire']);
  const bound: Array<{ name: string; creator: string }> = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      refs.push({ spec: literalText(node.moduleSpecifier), line: line(node), how: 'import' });
    } else if (ts.isImportTypeNode(node)) {
      const arg = node.argument;
      refs.push({ spec: ts.isLiteralTypeNode(arg) ? literalText(arg.literal) : null, line: line(node), how: 'import' });
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      refs.push({ spec: literalText(node.moduleReference.expression), line: line(node), how: 'require' });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      refs.push({ spec: literalText(node.arguments[0]), line: line(node), how: 'import' });
    } else if (ts.isCallExpression(node)) {
      const name = calleeName(node);
      if (name) calls.push({ name, node });
    } else if (ts.isImportSpecifier(node) && (node.propertyName ?? node.name).text === 'createRequire') {
      creators.add(node.name.text);
    } else if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer && ts.isCallExpression(node.initializer)) {
      const creator = calleeName(node.initializer);
      if (creator) bound.push({ name: node.name.text, creator });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  const requires = new Set(['require', ...bound.filter((b) => creators.has(b.creator)).map((b) => b.name)]);
  for (const { name, node } of calls) {
    const how = creators.has(name) ? 'createRequire' : requires.has(name) ? 'require' : null;
    if (how) refs.push({ spec: literalText(node.arguments[0]), line: line(node), how });
  }
  return refs.sort((a, b) => a.line - b.line);
}

function door(to: string[]): string | null {
  return to.length === 3 && /^index\.(ts|mts)$/.test(to[2]!) ? null : `reaches into ${to[1]}/ past its door: import services/${to[1]}/index.ts`;
}

/** services/<F>/… importing `to` (a path from the repository root, split). */
function serviceRule(from: string[], to: string[]): string | null {
  const f = from[1]!;
  const t = to[1]!;
  if (from.length < 3 || !FOLDERS[f]) return `${from.slice(0, 2).join('/')} has no layer in scripts/check-imports.ts`;
  if (to[0] !== 'services' || to.length < 3) return `imports outside the service folders (${to.join('/')})`;
  if (t === f) return null;
  const [mine, theirs] = [FOLDERS[f], FOLDERS[t]];
  if (!theirs) return `imports outside the known folders (${t})`;
  if (theirs.layer >= mine.layer) return `${f} (layer ${mine.layer}) imports ${t} (layer ${theirs.layer}): only lower layers may be imported`;
  if (theirs.onlyFor && theirs.onlyFor !== f) return `${t} may be imported only by ${theirs.onlyFor}`;
  return door(to);
}

/** test/, bench/ or scripts/ importing `to`: doors only, except the white-box code of the header. */
function outsideRule(from: string[], to: string[]): string | null {
  if (to[0] !== 'services') return null;
  if (to.length < 3 || !FOLDERS[to[1]!]) return `imports outside the known folders (${to.slice(0, 2).join('/')})`;
  const t = to[1]!;
  const whiteBox = (from[0] === 'test' && from[1] === 'integration')
    || (from[0] === 'test' && from[1] === 'unit' && from[2] === t && from.length > 3)
    || (from[0] === 'bench' && from[1] === t && from.length > 2);
  return whiteBox ? null : door(to);
}

function judge(root: string, file: string, from: string[], ref: ModuleRef): string | null {
  const inServices = from[0] === 'services';
  if (ref.how === 'createRequire') return inServices ? 'createRequire() in services/: load modules with import, which this check reads' : null;
  if (ref.how === 'require') return 'require() loads a module around this check: use import';
  if (ref.spec === null) return 'import() of a computed target: this check cannot see it, use a literal path';
  if (!ref.spec.startsWith('.') && !ref.spec.startsWith('/')) return null; // a package or a node: builtin
  const to = relative(root, resolve(dirname(file), ref.spec)).split(sep);
  return inServices ? serviceRule(from, to) : outsideRule(from, to);
}

/** Every violation under `root`'s services/, bench/, scripts/ and test/, or [] when the rules hold. */
export function checkImports(root: string): Violation[] {
  const found: Violation[] = [];
  for (const top of ROOTS.filter((r) => existsSync(join(root, r)))) {
    for (const file of sourceFiles(join(root, top))) {
      const from = relative(root, file).split(sep);
      for (const ref of moduleRefs(file, readFileSync(file, 'utf8'))) {
        const why = judge(root, file, from, ref);
        if (why) found.push({ file: from.join('/'), line: ref.line, target: ref.spec ?? '(computed)', why });
      }
    }
  }
  return found;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const found = checkImports(resolve(dirname(fileURLToPath(import.meta.url)), '..'));
  for (const v of found) console.log(`${v.file}:${v.line}: ${v.target}: ${v.why}`);
  console.log(found.length ? `${found.length} violation(s)` : 'imports run one way');
  process.exit(found.length ? 1 : 0);
}
