// `thinkflow policy check [--policy-dir D] [--project P] [--session-rules F]
//  (--cmd "…" | --tool T --path P [--dest D] | --net HOST[:PORT])`: one
// evaluation, printed as the single JSON line of API.md. Exit 0 for every
// decision, 2 for a bad policy file or bad arguments.
import { readFile } from 'node:fs/promises';
import { pathFields, TOOL_NAMES, TOOLS, type Command, type ToolName } from '../../protocol/index.ts';
import { evaluate, evaluateConnection, loadPolicyDir, parseHostPort, parsePolicyDocument, PolicyLoadError, type Evaluation, type NetworkTarget, type PolicyFile } from '../../policy/index.ts';

const USAGE = `usage: thinkflow policy check [--policy-dir D] [--project P] [--session-rules F]
                              (--cmd "SCRIPT" | --tool T --path P [--dest D] | --net HOST[:PORT])
  --policy-dir   policy directory (default: $THINKFLOW_POLICY_DIR or ./policies)
  --project      project layer: DIR/projects/<P>/*.yaml
  --session-rules  a policy file in the same YAML format, used as the session layer
  --net          a connection through the egress proxy: HOST, HOST:PORT, [IPv6]:PORT;
                 PORT defaults to 443. An IP-literal HOST also meets the
                 special-address check (loopback, private, metadata, …)
`;

/** The port of \`--net HOST\` without one: HTTPS, what a CONNECT through the proxy mostly is. */
const DEFAULT_NET_PORT = 443;

const VALUE_FLAGS = ['policy-dir', 'project', 'session-rules', 'cmd', 'tool', 'path', 'dest', 'net'] as const;
type Flag = (typeof VALUE_FLAGS)[number];

class UsageError extends Error {}

/**
 * A hand-rolled reader rather than util.parseArgs: a value is taken verbatim
 * even when it starts with `-` (`--cmd "-x"` or `--path -notes.md`), which
 * parseArgs refuses as ambiguous.
 */
function readFlags(args: string[]): Partial<Record<Flag, string>> {
  const out: Partial<Record<Flag, string>> = {};
  for (let k = 0; k < args.length; k++) {
    const a = args[k]!;
    if (!a.startsWith('--')) throw new UsageError(`unexpected argument '${a}'`);
    const eq = a.indexOf('=');
    const name = (eq < 0 ? a.slice(2) : a.slice(2, eq)) as Flag;
    if (!VALUE_FLAGS.includes(name)) throw new UsageError(`unknown option '${a}'`);
    if (out[name] !== undefined) throw new UsageError(`--${name} given twice`);
    if (eq >= 0) out[name] = a.slice(eq + 1);
    else if (k + 1 < args.length) out[name] = args[++k]!;
    else throw new UsageError(`--${name} needs a value`);
  }
  return out;
}

function commandFrom(f: Partial<Record<Flag, string>>): Command {
  const tool = (f.tool ?? (f.cmd !== undefined ? 'bash' : undefined)) as ToolName | undefined;
  if (tool === undefined) throw new UsageError('give --cmd, --tool with --path, or --net');
  if (tool === ('network' as string)) throw new UsageError('connections are checked with --net HOST[:PORT], not --tool network');
  if (!(TOOL_NAMES as readonly string[]).includes(tool)) throw new UsageError(`unknown tool '${tool}' (one of ${TOOL_NAMES.join(', ')})`);
  if (TOOLS[tool].judged === 'script') {
    if (f.cmd === undefined) throw new UsageError(`--tool ${tool} needs --cmd`);
    if (f.path !== undefined || f.dest !== undefined) throw new UsageError(`--path/--dest are for file tools, not ${tool}`);
    return { id: '1', tool, cmd: f.cmd, need_result: false };
  }
  if (f.cmd !== undefined) throw new UsageError(`--cmd is for bash, not ${tool}`);
  const takes = pathFields(tool);
  const c: Command = { id: '1', tool, need_result: false };
  for (const field of takes) {
    if (f[field] === undefined) throw new UsageError(`--tool ${tool} needs --${field}`);
    c[field] = f[field];
  }
  for (const field of PATH_FLAGS) {
    if (f[field] !== undefined && !takes.includes(field)) throw new UsageError(`--${field} is only for ${TOOL_NAMES.filter((t) => pathFields(t).includes(field)).join(', ')}`);
  }
  return c;
}

const PATH_FLAGS = ['path', 'dest'] as const;

function netTargetFrom(f: Partial<Record<Flag, string>>): NetworkTarget | undefined {
  if (f.net === undefined) return undefined;
  const others = (['cmd', 'tool', ...PATH_FLAGS] as const).filter((k) => f[k] !== undefined);
  if (others.length > 0) throw new UsageError(`--net checks a connection; it takes no ${others.map((k) => `--${k}`).join(', ')}`);
  const hp = parseHostPort(f.net);
  if ('error' in hp) throw new UsageError(`--net ${f.net}: ${hp.error}`);
  return { host: hp.host, port: hp.port ?? DEFAULT_NET_PORT };
}

async function sessionLayer(file: string | undefined): Promise<PolicyFile[]> {
  if (file === undefined) return [];
  const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new PolicyLoadError(`${file}: cannot read session rules (${err.code ?? err.message})`, file);
  });
  return [parsePolicyDocument(file, text, 'session')];
}

async function check(args: string[]): Promise<number> {
  const flags = readFlags(args);
  const net = netTargetFrom(flags);
  const command = net === undefined ? commandFrom(flags) : undefined;
  const dir = flags['policy-dir'] ?? process.env.THINKFLOW_POLICY_DIR ?? './policies';
  const store = await loadPolicyDir(dir);
  const layers = store.layers(flags.project, await sessionLayer(flags['session-rules']));
  const e: Evaluation = command ? evaluate(layers, command) : evaluateConnection(layers, net!);
  // Built field by field so the line has exactly the documented keys, in order.
  const line = {
    decision: e.decision,
    matched_rules: e.matched_rules.map((r) => ({ id: r.id, layer: r.layer, decision: r.decision, justification: r.justification })),
    reason: e.reason,
  };
  process.stdout.write(JSON.stringify(line) + '\n');
  return 0;
}

export async function policyMain(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === '--help' || sub === '-h' || sub === 'help' || rest.includes('--help')) {
    process.stdout.write(USAGE);
    return 0;
  }
  try {
    if (sub !== 'check') throw new UsageError(sub === undefined ? 'missing subcommand' : `unknown subcommand '${sub}'`);
    return await check(rest);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`thinkflow policy: ${err.message}\n${USAGE}`);
      return 2;
    }
    if (err instanceof PolicyLoadError) {
      process.stderr.write(`thinkflow policy: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}
