// The rules of global → project → session for one job, indexed for speed.
// Built once per job (or per CLI call); evaluation then only does lookups.
import { TOOL_NAMES, TOOLS, type ToolName } from '../protocol/index.ts';
import { stricter, type Decision } from './decision.ts';
import type { PolicyFile } from './parser.ts';
import { COMMAND_RULES, type CommandRule } from './rule-kinds/command-rule.ts';
import type { Rule } from './rule-kinds/index.ts';
import type { Layer } from './rule-kinds/kind.ts';
import { NETWORK_RULES, type Connection, type NetworkRule } from './rule-kinds/network-rule.ts';
import { PATH_RULES, type PathRule } from './rule-kinds/path-rule.ts';
import { DEFAULT_KEYS, type DefaultKey } from './schema.ts';

/**
 * POLICY.md §3.4 and §6: each tool's descriptor default (file tools and read
 * allow, bash prompts); complex scripts prompt; connections are refused
 * unless a rule or a layer's defaults.network says otherwise (§8).
 */
export const BUILTIN_DEFAULTS: Readonly<Record<DefaultKey, Decision>> = {
  ...(Object.fromEntries(TOOL_NAMES.map((t) => [t, TOOLS[t].defaultDecision])) as Record<ToolName, Decision>),
  network: 'forbid',
  complex_command: 'prompt',
};

export type ResolvedDefault = { decision: Decision; layer: Layer | 'builtin'; files: string[] };

const LAYER_ORDER: readonly Layer[] = ['global', 'project', 'session'];

export class PolicyLayers {
  readonly files: readonly PolicyFile[];
  /** Every rule in global → project → session order. */
  readonly rules: readonly Rule[];
  /** A rule's rank: the position of its file rule (the rules of a two-kind file rule share one). */
  private readonly order = new Map<Rule, number>();
  private twoKinds = false;
  // Command rules by literal first token; those whose first token is "*" or
  // that have no pattern are checked for every argv.
  private readonly byProgram = new Map<string, CommandRule[]>();
  private readonly everyCommand: CommandRule[] = [];
  /** Path rules by the tool they judge. */
  private readonly byTool = new Map<ToolName, PathRule[]>();
  /** Path rules of `write` that judge seeded and uploaded files (applies_to). */
  private readonly seeded: PathRule[] = [];
  /** Network rules, in layer order: few, and matched per connection rather than per command. */
  private readonly network: NetworkRule[] = [];
  private readonly defaults = new Map<DefaultKey, ResolvedDefault>();

  constructor(global: readonly PolicyFile[], project: readonly PolicyFile[], session: readonly PolicyFile[]) {
    const byLayer: Record<Layer, readonly PolicyFile[]> = { global, project, session };
    this.files = [...global, ...project, ...session];
    this.rules = this.files.flatMap((f) => f.rules);
    this.rank();
    for (const t of TOOL_NAMES) this.byTool.set(t, []);
    for (const r of this.rules) {
      if (r.kind === 'path' && r.appliesTo.has('seeded_files') && r.tools.has('write')) this.seeded.push(r);
      if (!r.appliesTo.has('commands')) continue;
      switch (r.kind) {
        case 'command':
          this.indexCommand(r);
          break;
        case 'path':
          for (const t of r.tools) this.byTool.get(t)!.push(r);
          break;
        case 'network':
          this.network.push(r);
          break;
        default: {
          // A kind registered in rule-kinds/index.ts needs its index here: the compiler stops at this line.
          const unindexed: never = r;
          throw new Error(`rule ${(unindexed as Rule).id}: no index for its kind`);
        }
      }
    }
    for (const key of DEFAULT_KEYS) this.defaults.set(key, resolveDefault(key, byLayer));
  }

  private rank(): void {
    let rank = -1;
    for (const f of this.files) {
      f.rules.forEach((r, k) => {
        // A file rule of two kinds compiles to adjacent rules with its one index (rule-kinds/index.ts).
        if (k > 0 && f.rules[k - 1]!.index === r.index) this.twoKinds = true;
        else rank++;
        this.order.set(r, rank);
      });
    }
  }

  private indexCommand(r: CommandRule): void {
    const first = r.pattern?.[0];
    if (first === undefined || first.any) this.everyCommand.push(r);
    else for (const a of first.alts) push(this.byProgram, a, r);
  }

  /** The command rules matching one argv, in layer order. */
  matchArgv(argv: readonly string[]): CommandRule[] {
    const program = argv[0] ?? '';
    const slash = program.lastIndexOf('/');
    const out: CommandRule[] = [];
    const direct = this.byProgram.get(program);
    if (direct) for (const r of direct) if (COMMAND_RULES.matches(r, argv)) out.push(r);
    // A path-qualified program may still hit forbid/prompt rules by base name.
    const base = slash >= 0 ? this.byProgram.get(program.slice(slash + 1)) : undefined;
    if (base) for (const r of base) if (COMMAND_RULES.matches(r, argv)) out.push(r);
    for (const r of this.everyCommand) if (COMMAND_RULES.matches(r, argv)) out.push(r);
    // A rule sits once per program it names, so the lists above are disjoint
    // except when the base name equals the program; a Set keeps this linear.
    const unique = base && direct ? [...new Set(out)] : out;
    return unique.length > 1 ? this.sort(unique) : unique;
  }

  /** The path rules of a file tool matching one normalised path, in layer order. */
  matchPath(tool: ToolName, path: string): PathRule[] {
    return (this.byTool.get(tool) ?? []).filter((r) => PATH_RULES.matches(r, path));
  }

  /** The path rules judging a seeded or uploaded file at one normalised path, in layer order. */
  matchSeeded(path: string): PathRule[] {
    return this.seeded.filter((r) => PATH_RULES.matches(r, path));
  }

  /** The network rules matching one connection, in layer order. */
  matchConnection(c: Connection): NetworkRule[] {
    return this.network.filter((r) => NETWORK_RULES.matches(r, c));
  }

  /** Every network rule, in layer order. */
  networkRules(): readonly NetworkRule[] {
    return this.network;
  }

  /** Every path rule of a file tool, in layer order. */
  rulesOf(tool: ToolName): readonly PathRule[] {
    return this.byTool.get(tool) ?? [];
  }

  defaultFor(key: DefaultKey): ResolvedDefault {
    return this.defaults.get(key)!;
  }

  /** In layer order, each file rule once (a file rule of two kinds may match through both). */
  sort<R extends Rule>(rules: Iterable<R>): R[] {
    const sorted = [...rules].sort((a, b) => this.order.get(a)! - this.order.get(b)!);
    if (!this.twoKinds) return sorted;
    return sorted.filter((r, k) => k === 0 || this.order.get(r) !== this.order.get(sorted[k - 1]!));
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
