// What new sessions starting cost a session already at work: one session
// writes 1 KiB back to back over `POST /v1/sessions/:id/commands` (real Redis,
// Docker, per-session filesystems), alone, then while a second client opens
// sessions one after another (each a container, a workspace image attached
// with losetup, spare images copied and attached, one write) and deletes them
// (losetup -d). Each of those host tools was forked from the service, which
// held its event loop ~7 ms a time; a runner process starts them now
// (services/sandbox/tool-runner.ts). `--before DIR` runs an older checkout in
// the same run. One `thinkflow serve --role all` child per checkout, warm pool 0.
//   npm run bench:session-starts [-- --seconds 12 --before /tmp/tf-before]
import type { ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import { freePort, pct, serveAll, stopService } from '../lib/measure.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '12' }, before: { type: 'string' } } });
const SECONDS = Number(values.seconds);
const ROOT = new URL('../../', import.meta.url).pathname;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const tag = Math.random().toString(36).slice(2, 8);
const KIB = 'k'.repeat(1024);

type Window = { writes: number[]; starts: number };
type Figures = { label: string; alone: Window; starting: Window };

async function session(base: string): Promise<string> {
  const r = await fetch(`${base}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  return ((await r.json()) as { session_id: string }).session_id;
}

async function write(base: string, sid: string, path: string): Promise<number> {
  const t0 = performance.now();
  const r = await fetch(`${base}/v1/sessions/${sid}/commands`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `<tf-write id="1" path="${path}">${KIB}</tf-write>` });
  const out = (await r.json()) as { results: { status: string }[] };
  if (out.results[0]?.status !== 'succeeded') throw new Error(`write: ${JSON.stringify(out)}`);
  return performance.now() - t0;
}

/** The busy session's writes for `SECONDS`, with `load` running beside them until they end. */
async function window(base: string, busy: string, load: (until: number) => Promise<number>): Promise<Window> {
  const until = performance.now() + SECONDS * 1000;
  const writes: number[] = [];
  const starting = load(until);
  for (let i = 0; performance.now() < until; i++) writes.push(await write(base, busy, `w/${i % 50}.txt`));
  return { writes, starts: await starting };
}

/** Opens sessions one after another (one write each), deleting each, until `until`: how many. */
async function opening(base: string, until: number): Promise<number> {
  let n = 0;
  while (performance.now() < until) {
    const sid = await session(base);
    await write(base, sid, 'first.txt');
    await fetch(`${base}/v1/sessions/${sid}`, { method: 'DELETE' });
    n++;
  }
  return n;
}

async function measure(label: string, root: string): Promise<Figures> {
  const prefix = `tfbench-ss-${tag}-${label.length}`;
  const boxes = `tfbench-ss-${tag}-${label.length}-`;
  const port = await freePort();
  const service: ChildProcess = await serveAll(root, {
    PORT: String(port), HOST: '127.0.0.1', REDIS_URL, THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_API_KEYS: '', THINKFLOW_WARM_POOL: '0',
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    const busy = await session(base);
    for (let i = 0; i < 20; i++) await write(base, busy, 'warm.txt');
    await opening(base, performance.now() + 3000); // the spare images' first refill done, as in a service that has run a while
    const alone = await window(base, busy, async () => 0);
    const starting = await window(base, busy, (until) => opening(base, until));
    const f = { label, alone, starting };
    process.stdout.write(`[${label}] busy write p50/p99: alone ${pct(alone.writes, 50).toFixed(1)}/${pct(alone.writes, 99).toFixed(1)} ms, with ${starting.starts} sessions opened ${pct(starting.writes, 50).toFixed(1)}/${pct(starting.writes, 99).toFixed(1)} ms\n`);
    return f;
  } finally {
    await stopService(service, boxes);
  }
}

async function main(): Promise<void> {
  const os = await import('node:os');
  console.log(`session-starts bench: ${new Date().toISOString()}, ${os.cpus().length} cores, node ${process.version}, load ${os.loadavg()[0]!.toFixed(1)}; ${SECONDS} s windows`);
  const all: Figures[] = [];
  if (values.before) all.push(await measure('before', values.before));
  all.push(await measure('this checkout', ROOT));
  const row = (name: string, cell: (f: Figures) => string) => `${name.padEnd(50)}${all.map((f) => cell(f).padStart(18)).join('')}`;
  const p = (w: Window, q: number) => pct(w.writes, q).toFixed(1);
  console.log(`\n${row('', (f) => f.label)}`);
  console.log(row('busy 1 KiB write alone, p50 / p99 (ms)', (f) => `${p(f.alone, 50)} / ${p(f.alone, 99)}`));
  console.log(row('the same while sessions open, p50 / p99 (ms)', (f) => `${p(f.starting, 50)} / ${p(f.starting, 99)}`));
  console.log(row('sessions opened (and deleted) meanwhile', (f) => String(f.starting.starts)));
  console.log(row('p99 while opening / alone', (f) => (pct(f.starting.writes, 99) / pct(f.alone.writes, 99)).toFixed(2)));
}

main().catch((err: unknown) => { console.error(err); process.exit(1); });
