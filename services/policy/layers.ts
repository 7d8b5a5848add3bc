// The rules of global → project → session for one job, indexed for speed.
// Built once per job (or per CLI call); evaluation then only does lookups.
import { TOOL_NAMES, TOOLS, type ToolName } from '../protocol/index.ts';
import { stricter, type Decision } from './decision.ts';
import type { PolicyFile } from './parser.ts';
import { ruleMatchesArgv, ruleMatchesPath, type Layer, type Rule } from './rule.ts';
import { DEFAULT_KEYS, type DefaultKey } from './schema.ts';

/** POLICY.md §3.4 and §6: each tool's descriptor default (file tools and read allow, bash prompts); complex scripts prompt. */
export const BUILTIN_DEFAULTS: Readonly<Record<DefaultKey, Decision>> = {
  ...(Object.fromEntries(TOOL_NAMES.map((t) => [t, TOOLS[t].defaultDecision])) as Record<ToolName, Decision>),
  complex_command: 'prompt',
};

export type ResolvedDefault = { decision: Decision; layer: Layer | 'builtin'; files: string[] };

const LAYER_ORDER: readonly Layer[] = ['global', 'project', 'session'];

export class PolicyLayers {
  readonly files: readonly PolicyFile[];
  /** Every rule in global → project → session order; a rule's position is its rank here. */
  readonly rules: readonly Rule[];
  private readonly order = new Map<Rule, number>();
  // bash rules by literal first token; rules whose first token is "*" or that
  // have no `command` are checked for every argv.
  private readonly byProgram = new Map<string, Rule[]>();
  private readonly everyCommand: Rule[] = [];
  private readonly byTool = new Map<ToolName, Rule[]>();
  private readonly defaults = new Map<DefaultKey, ResolvedDefault>();

  constructor(global: readonly PolicyFile[], project: readonly PolicyFile[], session: readonly PolicyFile[]) {
    const byLayer: Record<Layer, readonly PolicyFile[]> = { global, project, session };
    this.files = [...global, ...project, ...session];
    this.rules = this.files.flatMap((f) => f.rules);
    this.rules.forEach((r, k) => this.order.set(r, k));
    for (const t of TOOL_NAMES) this.byTool.set(t, []);
    for (const r of this.rules) {
      for (const t of r.tools) this.byTool.get(t)!.push(r);
      if (!r.tools.has('bash')) continue;
      const first = r.command?.[0];
      if (first === undefined || first.any) this.everyCommand.push(r);
      else for (const a of first.alts) push(this.byProgram, a, r);
    }
    for (const key of DEFAULT_KEYS) this.defaults.set(key, resolveDefault(key, byLayer));
  }

  /** The bash rules matching one argv, in layer order. */
  matchArgv(argv: readonly string[]): Rule[] {
    const program = argv[0] ?? '';
    const slash = program.lastIndexOf('/');
    const out: Rule[] = [];
    const direct = this.byProgram.get(program);
    if (direct) for (const r of direct) if (ruleMatchesArgv(r, argv)) out.push(r);
    // A path-qualified program may still hit forbid/prompt rules by base name.
    const base = slash >= 0 ? this.byProgram.get(program.slice(slash + 1)) : undefined;
    if (base) for (const r of base) if (ruleMatchesArgv(r, argv)) out.push(r);
    for (const r of this.everyCommand) if (ruleMatchesArgv(r, argv)) out.push(r);
    // A rule sits once per program it names, so the lists above are disjoint
    // except when the base name equals the program; a Set keeps this linear.
    const unique = base && direct ? [...new Set(out)] : out;
    return unique.length > 1 ? this.sort(unique) : unique;
  }

  /** The rules of a file tool matching one normalised path, in layer order. */
  matchPath(tool: ToolName, path: string): Rule[] {
    return (this.byTool.get(tool) ?? []).filter((r) => ruleMatchesPath(r, path));
  }

  /** Every rule of a file tool, in layer order. */
  rulesOf(tool: ToolName): readonly Rule[] {
    return this.byTool.get(tool) ?? [];
  }

  defaultFor(key: DefaultKey): ResolvedDefault {
    return this.defaults.get(key)!;
  }

  sort(rules: Iterable<Rule>): Rule[] {
    return [...rules].sort((a, b) => this.order.get(a)! - this.order.get(b)!);
  }
}

/** Most specific layer that sets the key wins; within a layer the strictest file wins. */
function resolveDefault(key: DefaultKey, byLayer: Record<Layer, readonly PolicyFile[]>): ResolvedDefault {
  for (const layer of [...LAYER_ORDER].reverse()) {
    let decision: Decision | undefined;
    const files: string[] = [];
    for (const f of byLayer[layer]) {
      const d = f.defaults[key];
      if (d === undefined) continue;
      decision = decision === undefined ? d : stricter(decision, d);
      files.push(f.name);
    }
    if (decision !== undefined) return { decision, layer, files };
  }
  return { decision: BUILTIN_DEFAULTS[key], layer: 'builtin', files: [] };
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
}
