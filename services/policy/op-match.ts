// The rules a file operation of a bash command meets (POLICY.md §7:
// redirections and path arguments are file operations). A plain operation
// is the path itself. A `tree` (`rm -r d`, `mv d x`) is the path and all
// under it: a forbid that reaches anything there applies. `some` unknown
// entries under a path (`tar -x -C d`, `find d -name x -delete`): a rule
// that covers every entry there applies; a forbid or prompt that may cover
// only some of them leaves the decision to the text's author, so the script
// is complex (the policy's default), never allowed on a guess.
import type { PolicyLayers } from './layers.ts';
import type { FileOp } from './redirects.ts';
import { PATH_RULES, pathRuleReaches, type PathRule } from './rule-kinds/path-rule.ts';

export type OpMatch = { rules: PathRule[]; unsure: PathRule[] };

/** A name no rule's literal text spells: only wildcards match it, so a rule matching `dir/PROBE` covers every entry of dir. */
const PROBE = '\u0001\u0002';

export function matchOp(layers: PolicyLayers, op: FileOp): OpMatch {
  if (op.scope === undefined) return { rules: layers.matchPath(op.tool, op.path), unsure: [] };
  const rules: PathRule[] = [];
  const unsure: PathRule[] = [];
  const probe = op.path === '.' ? PROBE : `${op.path}/${PROBE}`;
  for (const r of layers.rulesOf(op.tool)) {
    if (op.scope === 'tree') {
      // An allow must cover the whole tree; a restriction anything in it.
      const hit = r.decision === 'allow'
        ? PATH_RULES.matches(r, op.path) && PATH_RULES.matches(r, probe)
        : PATH_RULES.matches(r, op.path) || pathRuleReaches(r, op.path, true);
      if (hit) rules.push(r);
    } else if (PATH_RULES.matches(r, probe)) rules.push(r);
    else if (r.decision !== 'allow' && pathRuleReaches(r, op.path, op.dotOk === true)) unsure.push(r);
  }
  return { rules, unsure };
}

/** The reason a script with an operation that may meet a rule is complex, or undefined. */
export function unsureReason(layers: PolicyLayers, ops: readonly FileOp[]): string | undefined {
  for (const op of ops) {
    if (op.scope !== 'some') continue;
    const r = matchOp(layers, op).unsure[0];
    if (r) return `writes unknown entries under ${op.path}, some of which rule ${r.id} may cover`;
  }
  return undefined;
}

/** How a part names its operation in a reason. */
export function describeOp(op: Pick<FileOp, 'tool' | 'path' | 'via' | 'scope'>): string {
  if (op.via !== 'operand') return `${op.tool} of ${op.path} (redirection)`;
  const what = op.scope === 'tree' ? `${op.path} and everything under it` : op.scope === 'some' ? `entries under ${op.path}` : op.path;
  return `${op.tool} of ${what} (path argument)`;
}
