// Behaviour is unchanged across a refactor when the same replay jobs give the
// same ledgers and events, apart from ids and times. This runs them on two
// checkouts and prints every difference.
//
// usage: npx tsx scripts/compare-replay.ts OLD_CHECKOUT NEW_CHECKOUT [--only TEXT] [--timeout S] [--out DIR]
//        npx tsx scripts/compare-replay.ts --from DIR   (diff the raw dumps of an earlier run again)
//   e.g. git worktree add /tmp/old c217a09 && ln -s "$PWD/node_modules" /tmp/old/node_modules
//        npx tsx scripts/compare-replay.ts /tmp/old .
//
// For each checkout in turn (old, then new): its own sandbox-image/build.sh
// builds thinkflow/sandbox:cmp-old or :cmp-new (skipped when up to date), a
// private `redis-server --save '' --appendonly no` starts on a free port, and
// the checkout's own `thinkflow serve` (built-in replay model, dev mode, its
// ./policies) starts on another. Each job is submitted, approvals of the
// answered ones are decided over REST, the SSE stream is read to
// job_finished, then the job view and the session's ledger are fetched and
// the session deleted. Jobs: every built-in replay scenario in both flows
// (the demo job is web-skeleton/thinkflow; midway-failure has the failing
// command), and the operator-review scenario with its REVIEW_POLICY twice:
// in `never` mode (prompts become forbidden) and `on-request` with answers.
//
// Normalised before the diff (scripts/compare-replay/normalise.ts): job,
// session, tool-call ids and approval tokens to numbered placeholders; `at`,
// `*_at`, `timings` and ISO times in text to <time>; `*_ms` to <ms>;
// `executed_by` (host:pid) to <worker>; SSE `seq`/`id` dropped; events split
// into lanes (the model stream, one per ledger index, and the order commands
// were queued, started and finished in) with a lane's consecutive deltas
// joined; in a turn that ends interrupted, the text streamed after its last
// command is cut by timing, so it is compared as "one side's is a prefix of
// the other's". Usage is compared as is (the replay model's token counts are
// exact), except the completion of a job whose usage is `estimated` (it
// counts that tail).
// Exit 0 when all jobs match, 1 on any difference, 2 on a usage error or a
// run that could not finish. The normalised and raw dumps go to --out
// (default .tmp/compare-replay/) for a closer look.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { diffTails, diffValues } from './compare-replay/diff.ts';
import { jobSpecs, runJob, type RawDump } from './compare-replay/jobs.ts';
import { normalise, type NormalDump } from './compare-replay/normalise.ts';
import { startSide } from './compare-replay/side.ts';

const say = (line = '') => process.stdout.write(`${line}\n`);

function args() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { from: { type: 'string' }, only: { type: 'string' }, timeout: { type: 'string', default: '240' }, out: { type: 'string', default: '.tmp/compare-replay' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help || positionals.length !== (values.from ? 0 : 2)) {
    process.stderr.write('usage: npx tsx scripts/compare-replay.ts OLD_CHECKOUT NEW_CHECKOUT [--only TEXT] [--timeout S] [--out DIR]\n       npx tsx scripts/compare-replay.ts --from DIR\n');
    process.exit(values.help ? 0 : 2);
  }
  const out = resolve(values.from ?? values.out);
  return { old: positionals[0]!, new: positionals[1]!, from: values.from !== undefined, only: values.only, timeoutMs: Number(values.timeout) * 1000, out };
}

async function runSide(name: 'old' | 'new', checkout: string, opts: ReturnType<typeof args>): Promise<RawDump[]> {
  const side = await startSide(name, checkout, `thinkflow/sandbox:cmp-${name}`, opts.out);
  const stopOnSignal = () => void side.stop().finally(() => process.exit(2));
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  try {
    say(`${name}: ${side.checkout} at ${side.url} (log ${side.log})`);
    const dumps: RawDump[] = [];
    for (const spec of jobSpecs().filter((s) => !opts.only || s.name.includes(opts.only))) {
      const dump = await runJob(side.url, spec, opts.timeoutMs);
      const status = (dump.view as { status?: string }).status;
      say(`  ${spec.name}: ${status}, ${dump.events.length} events, ${dump.ledger.length} ledger records${dump.answers.length ? `, ${dump.answers.length} approvals answered` : ''}`);
      dumps.push(dump);
    }
    return dumps;
  } finally {
    process.off('SIGINT', stopOnSignal);
    process.off('SIGTERM', stopOnSignal);
    await side.stop();
  }
}

function compare(olds: NormalDump[], news: NormalDump[]): number {
  let differences = 0;
  for (const [i, o] of olds.entries()) {
    const n = news[i]!;
    const out: string[] = [];
    diffValues(o.view, n.view, 'view', out);
    for (const lane of [...new Set([...Object.keys(o.lanes), ...Object.keys(n.lanes)])]) diffValues(o.lanes[lane], n.lanes[lane], `events[${lane}]`, out);
    diffTails(o.tails, n.tails, out);
    diffValues(o.ledger, n.ledger, 'ledger', out);
    diffValues(o.answers, n.answers, 'approvals', out);
    say(`${o.name}: ${out.length ? `${out.length} difference(s)` : 'identical'} (events ${o.counts.events}/${n.counts.events} as streamed, ${o.counts.compared}/${n.counts.compared} compared; ledger records ${o.counts.ledger}/${n.counts.ledger})`);
    for (const line of out) say(`  ${line}`);
    differences += out.length;
  }
  return differences;
}

async function main(): Promise<number> {
  const opts = args();
  mkdirSync(opts.out, { recursive: true });
  const saved = (side: 'old' | 'new') => JSON.parse(readFileSync(join(opts.out, `raw-${side}.json`), 'utf8')) as RawDump[];
  const raw = opts.from
    ? { old: saved('old'), new: saved('new') }
    : { old: await runSide('old', opts.old, opts), new: await runSide('new', opts.new, opts) };
  const norm = { old: raw.old.map(normalise), new: raw.new.map(normalise) };
  for (const side of ['old', 'new'] as const) {
    writeFileSync(join(opts.out, `raw-${side}.json`), JSON.stringify(raw[side], null, 2));
    writeFileSync(join(opts.out, `${side}.json`), JSON.stringify(norm[side], null, 2));
  }
  say();
  const differences = compare(norm.old, norm.new);
  const total = (side: 'old' | 'new', k: 'events' | 'compared' | 'ledger') => norm[side].reduce((n, d) => n + d.counts[k], 0);
  say();
  say(`${norm.old.length} jobs; events ${total('old', 'events')} old / ${total('new', 'events')} new as streamed, ${total('old', 'compared')} / ${total('new', 'compared')} compared; ledger records ${total('old', 'ledger')} old / ${total('new', 'ledger')} new`);
  say(differences ? `${differences} difference(s); dumps in ${opts.out}` : `no differences; dumps in ${opts.out}`);
  return differences ? 1 : 0;
}

main().then((code) => { process.exitCode = code; }, (err: unknown) => {
  process.stderr.write(`compare-replay: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exitCode = 2;
});
