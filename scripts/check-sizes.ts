// The size rules of the guide, measured: no source file under services/ over
// MAX_FILE_LINES lines, and no function (declaration, method, arrow or
// function expression, accessor, constructor) over MAX_FUNCTION_LINES lines in
// the folders that hold the command lifecycle and the turn loop.
// `npx tsx scripts/check-sizes.ts` prints the offenders and exits 1 if any;
// test/unit/architecture/sizes.test.ts runs the same check.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const MAX_FILE_LINES = 300;
export const MAX_FUNCTION_LINES = 60;
export const FUNCTION_RULE_FOLDERS = ['pipeline', 'agent'];

export type SizeViolation = { file: string; what: string; lines: number; limit: number };

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return /\.(ts|mts)$/.test(name) && !/\.test\.ts$/.test(name) ? [p] : [];
  });
}

function functionName(node: ts.Node, sf: ts.SourceFile): string {
  const named = node as { name?: ts.Node };
  if (named.name) return named.name.getText(sf);
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(sf);
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText(sf);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  return `<anonymous at line ${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1}>`;
}

/** Functions longer than `limit` lines in one file's text. */
export function longFunctions(fileName: string, text: string, limit = MAX_FUNCTION_LINES): { name: string; lines: number }[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const out: { name: string; lines: number }[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && (node as { body?: ts.Node }).body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = end - start + 1;
      if (lines > limit) out.push({ name: functionName(node, sf), lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

export function checkSizes(servicesDir: string): SizeViolation[] {
  const found: SizeViolation[] = [];
  for (const file of sourceFiles(servicesDir)) {
    const rel = relative(servicesDir, file);
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > MAX_FILE_LINES) found.push({ file: rel, what: 'file', lines, limit: MAX_FILE_LINES });
    if (FUNCTION_RULE_FOLDERS.includes(rel.split(sep)[0]!)) {
      for (const f of longFunctions(file, text)) found.push({ file: rel, what: `function ${f.name}`, lines: f.lines, limit: MAX_FUNCTION_LINES });
    }
  }
  return found;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const found = checkSizes(resolve(dirname(fileURLToPath(import.meta.url)), '..', 'services'));
  for (const v of found) console.log(`${v.file}: ${v.what}: ${v.lines} lines (limit ${v.limit})`);
  console.log(found.length ? `${found.length} over the limits` : 'sizes within the limits');
  process.exit(found.length ? 1 : 0);
}
