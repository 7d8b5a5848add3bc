// Policy file text (or an already-parsed job body) → a validated PolicyFile.
// Every error names `FILE: rules[INDEX] (id): reason` (POLICY.md §6).
import { parseDocument } from 'yaml';
import { PolicyLoadError, ruleError } from './errors.ts';
import { expandedGlobChars } from './glob.ts';
import { compileRule, type Rule } from './rule-kinds/index.ts';
import type { Layer } from './rule-kinds/kind.ts';
import { formatIssues, PolicyFileSchema, RuleSchema, type Defaults } from './schema.ts';

export type PolicyFile = {
  name: string;
  layer: Layer;
  defaults: Defaults;
  /** In file order; a file rule of two kinds is two compiled rules (rule-kinds/index.ts). */
  rules: Rule[];
};

/**
 * @param name shown in errors (a file path, or e.g. `job policy`)
 * @param doc YAML text, or an object already parsed from JSON
 * @throws PolicyLoadError
 * @example parsePolicyDocument('global/base.yaml', 'version: 1\nrules: []\n', 'global')
 */
export function parsePolicyDocument(name: string, doc: string | unknown, layer: Layer): PolicyFile {
  const data = typeof doc === 'string' ? parseYaml(name, doc, layer === 'session') : doc;
  if (data === null || data === undefined) throw new PolicyLoadError(`${name}: empty policy file (expected a mapping with version: 1)`, name);
  const envelope = PolicyFileSchema.safeParse(data);
  if (!envelope.success) throw new PolicyLoadError(`${name}: ${formatIssues(envelope.error)}`, name);
  const seen = new Set<string>();
  const raws = envelope.data.rules ?? [];
  if (layer === 'session' && raws.length > SESSION_LIMITS.rules) {
    throw new PolicyLoadError(`${name}: ${raws.length} rules (a policy sent with a job or session has at most ${SESSION_LIMITS.rules})`, name);
  }
  const totals = { exampleChars: 0, alternatives: 0, globChars: 0, netEntries: 0 };
  const rules = raws.flatMap((raw, index) => {
    const id = idOf(raw);
    if (layer === 'session') addSessionTotals(name, index, id, raw, totals);
    const parsed = RuleSchema.safeParse(raw);
    if (!parsed.success) throw ruleError(name, index, id, formatIssues(parsed.error));
    if (seen.has(parsed.data.id)) throw ruleError(name, index, id, `duplicate rule id '${parsed.data.id}' in this file`);
    seen.add(parsed.data.id);
    const fail = (reason: string): never => {
      throw ruleError(name, index, parsed.data.id, reason);
    };
    return compileRule({ file: name, index, layer }, parsed.data, fail);
  });
  return { name, layer, defaults: envelope.data.defaults ?? {}, rules };
}

/**
 * A policy sent with a job or session is read on the API's event loop, so
 * its size is bounded to keep loading it within a few milliseconds (§7).
 * Operators' files are read at start-up and are not bounded.
 */
export const SESSION_LIMITS = {
  rules: 256, examples: 32, exampleChars: 8192, allExampleChars: 16384, tokens: 32, alternatives: 128, allAlternatives: 4096, allGlobChars: 16384,
} as const;

type Totals = { exampleChars: number; alternatives: number; globChars: number; netEntries: number };

/** Per-rule limits, and the running totals of the whole policy (each checked as it grows). */
function addSessionTotals(file: string, index: number, id: string | undefined, raw: unknown, totals: Totals): void {
  if (!raw || typeof raw !== 'object') return;
  const r = raw as { examples?: { match?: unknown; not_match?: unknown }; command?: unknown; except?: unknown; path?: unknown; host?: unknown; cidr?: unknown; port?: unknown };
  const fail = (reason: string): never => {
    throw ruleError(file, index, id, `${reason} (limit for a policy sent with a job or session)`);
  };
  for (const key of ['match', 'not_match'] as const) {
    const list = r.examples?.[key];
    if (!Array.isArray(list)) continue;
    if (list.length > SESSION_LIMITS.examples) fail(`examples.${key} has ${list.length} entries, at most ${SESSION_LIMITS.examples}`);
    for (const ex of list) {
      const size = typeof ex === 'string' ? ex.length : Array.isArray(ex) ? ex.reduce((n: number, t) => n + String(t).length, 0) : 0;
      if (size > SESSION_LIMITS.exampleChars) fail(`an example of examples.${key} has ${size} characters, at most ${SESSION_LIMITS.exampleChars}`);
      totals.exampleChars += size;
    }
  }
  const patterns = [r.command, ...(Array.isArray(r.except) ? r.except : [])].filter(Array.isArray) as unknown[][];
  for (const p of patterns) {
    if (p.length > SESSION_LIMITS.tokens) fail(`a command pattern has ${p.length} tokens, at most ${SESSION_LIMITS.tokens}`);
    for (const t of p) {
      if (Array.isArray(t) && t.length > SESSION_LIMITS.alternatives) fail(`a token has ${t.length} alternatives, at most ${SESSION_LIMITS.alternatives}`);
      totals.alternatives += Array.isArray(t) ? t.length : 1;
    }
  }
  for (const key of ['host', 'cidr', 'port'] as const) {
    const list = r[key];
    if (Array.isArray(list) && list.length > SESSION_LIMITS.alternatives) fail(`${key} has ${list.length} entries, at most ${SESSION_LIMITS.alternatives}`);
    totals.netEntries += Array.isArray(list) ? list.length : list === undefined ? 0 : 1;
  }
  const globs = [r.path, ...(Array.isArray(r.except) ? r.except : [])].flat().filter((g): g is string => typeof g === 'string');
  for (const g of globs) totals.globChars += expandedGlobChars(g);
  const over = totals.exampleChars > SESSION_LIMITS.allExampleChars ? `examples exceed ${SESSION_LIMITS.allExampleChars} characters`
    : totals.alternatives > SESSION_LIMITS.allAlternatives ? `command patterns exceed ${SESSION_LIMITS.allAlternatives} tokens and alternatives`
      : totals.globChars > SESSION_LIMITS.allGlobChars ? `globs exceed ${SESSION_LIMITS.allGlobChars} characters once {a,b} is expanded`
        : totals.netEntries > SESSION_LIMITS.allAlternatives ? `network rules exceed ${SESSION_LIMITS.allAlternatives} hosts, CIDRs and ports` : undefined;
  if (over) fail(`in all, the policy's ${over}`);
}

/** YAML text of a policy sent with a job or session: the YAML parser costs about 3 ms per KiB (more with aliases), and no policy work may hold the event loop more than a few milliseconds (POLICY.md §7); the JSON object form has no such cost. */
export const SESSION_YAML_MAX_BYTES = 8 * 1024;

function parseYaml(name: string, text: string, submitted: boolean): unknown {
  // A submitted policy is attacker input: bounded in size before parsing, and
  // without aliases (each alias costs a walk of what precedes it, so a few
  // thousand of them hold the event loop for seconds).
  if (submitted && Buffer.byteLength(text) > SESSION_YAML_MAX_BYTES) {
    throw new PolicyLoadError(`${name}: YAML text of ${Buffer.byteLength(text)} bytes; a policy sent with a job or session has at most ${SESSION_YAML_MAX_BYTES} (send it as a JSON object for more)`, name);
  }
  const d = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  const err = d.errors[0];
  if (err) throw new PolicyLoadError(`${name}: YAML error: ${err.message.split('\n')[0]!.replace(/:$/, '')}`, name, { cause: err });
  try {
    return d.toJS(submitted ? { maxAliasCount: 0 } : {});
  } catch (cause) {
    throw new PolicyLoadError(`${name}: YAML error: ${(cause as Error).message}${submitted ? ' (aliases are not accepted in a policy sent with a job or session)' : ''}`, name, { cause });
  }
}

function idOf(raw: unknown): string | undefined {
  if (raw && typeof raw === 'object' && 'id' in raw && (typeof raw.id === 'string' || typeof raw.id === 'number')) return String(raw.id);
  return undefined;
}
