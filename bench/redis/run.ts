// npm run bench:redis — Redis memory per session: N sessions of M small
// commands each plus one large edit, run through the real service (Redis,
// Docker sandboxes), once with record bodies cut at THINKFLOW_RECORD_BODY_BYTES
// (64 KiB, the default) and once with bodies kept whole (the records as they
// were before issue 18). Each run has a redis-server of its own, so
// used_memory and a SCAN of every key measure this workload only.
//   npm run bench:redis [-- --sessions 10 --commands 50 --edit-mib 4]
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { loadConfig } from '../../services/config/index.ts';
import { startService } from '../../services/main/index.ts';

const { values } = parseArgs({ options: {
  sessions: { type: 'string', default: '10' },
  commands: { type: 'string', default: '50' },
  'edit-mib': { type: 'string', default: '4' },
} });
const N = Number(values.sessions);
const M = Number(values.commands);
const EDIT_BYTES = Number(values['edit-mib']) * 2 ** 20;
const tag = Math.random().toString(36).slice(2, 8);
const KIB = 'x'.repeat(1023) + '\n';
const MiB = (b: number) => `${(b / 2 ** 20).toFixed(2)} MiB`;
const KiB = (b: number) => `${(b / 1024).toFixed(0)} KiB`;

type Mode = { name: string; bodyBytes: number };
type Figures = { mode: string; perSession: number; perKey: Record<string, number>; largestRecord: number; keys: number; untimedAfterDelete: number };

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const p = (s.address() as { port: number }).port; s.close(() => resolve(p)); });
  });
}

async function ownRedis(): Promise<{ url: string; client: Redis; stop(): void }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const client = new Redis(port, '127.0.0.1', { retryStrategy: () => 50 });
  let ready = false;
  // Refused connects are expected until the server listens; after that, say what failed.
  client.on('error', (err: Error) => { if (ready) console.error(`bench redis: ${err.message}`); });
  await client.ping();
  ready = true;
  return { url: `redis://127.0.0.1:${port}`, client, stop: () => { ready = false; client.disconnect(); child.kill('SIGKILL'); } };
}

async function scan(client: Redis): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'COUNT', 1000);
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  return out;
}

const kindOf = (key: string) => (/:q:/.test(key) ? 'queue' : /:rec:\d+$/.test(key) ? 'records' : /:events$/.test(key) ? 'events' : 'other');

async function post(base: string, path: string, body: string): Promise<void> {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
}

async function runMode(mode: Mode): Promise<Figures> {
  const redis = await ownRedis();
  const config = loadConfig({
    ...process.env, PORT: '0', REDIS_URL: redis.url, THINKFLOW_REDIS_PREFIX: `tfbr-${tag}`, THINKFLOW_SANDBOX_PREFIX: `tfbr-${tag}-${mode.name}-`,
    THINKFLOW_API_KEYS: '', THINKFLOW_POLICY_DIR: './policies', THINKFLOW_RECORD_BODY_BYTES: String(mode.bodyBytes), THINKFLOW_LOG_LEVEL: 'error',
  });
  const svc = await startService(config, {});
  try {
    const base = svc.url!;
    const used = async () => Number(/used_memory:(\d+)/.exec(await redis.client.info('memory'))![1]);
    const before = await used();
    const sids: string[] = [];
    for (let s = 0; s < N; s++) {
      const res = await fetch(`${base}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      const sid = ((await res.json()) as { session_id: string }).session_id;
      sids.push(sid);
      await post(base, `/v1/sessions/${sid}/commands`, '<tf-write id="1" path="big.txt">MARK\n</tf-write>');
      const small = Array.from({ length: M }, (_, i) => (i % 2
        ? `<tf-bash id="${i + 1}" cmd="echo ${i}" />`
        : `<tf-write id="${i + 1}" path="f${i}.txt">${KIB}</tf-write>`));
      await post(base, `/v1/sessions/${sid}/commands`, small.join('\n'));
      await post(base, `/v1/sessions/${sid}/commands`, `<tf-edit id="1" path="big.txt"><old>MARK\n</old><new>${'é€ab'.repeat(EDIT_BYTES / 7)}</new></tf-edit>`);
    }
    await new Promise((r) => setTimeout(r, 4000)); // Workers idle and closed: nothing transient left
    const delta = (await used()) - before;
    const perKey: Record<string, number> = {};
    let largestRecord = 0;
    const keys = (await scan(redis.client)).filter((k) => sids.some((sid) => k.includes(`{${sid}}`)));
    for (const k of keys) {
      const bytes = Number(await redis.client.memory('USAGE', k, 'SAMPLES', 0));
      perKey[kindOf(k)] = (perKey[kindOf(k)] ?? 0) + bytes / N;
      if (kindOf(k) === 'records') largestRecord = Math.max(largestRecord, bytes);
    }
    for (const sid of sids) await fetch(`${base}/v1/sessions/${sid}`, { method: 'DELETE' });
    await new Promise((r) => setTimeout(r, 4000));
    let untimed = 0;
    for (const k of (await scan(redis.client)).filter((k) => sids.some((sid) => k.includes(`{${sid}}`)))) if ((await redis.client.ttl(k)) < 0) untimed++;
    return { mode: mode.name, perSession: delta / N, perKey, largestRecord, keys: keys.length / N, untimedAfterDelete: untimed };
  } finally {
    await svc.close();
    redis.stop();
  }
}

const cut = await runMode({ name: 'cut', bodyBytes: loadConfig({}).recordBodyBytes });
const whole = await runMode({ name: 'whole', bodyBytes: 2 ** 40 });
console.log(`redis bench: ${new Date().toISOString()}, ${N} sessions × (${M} commands of ≤ 1 KiB + one ${MiB(EDIT_BYTES)} edit), own redis-server`);
console.log('| records | used_memory Δ per session | records | events | queue | other | largest record | keys per session | keys without TTL after DELETE |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const f of [cut, whole]) {
  const k = (name: string) => KiB(f.perKey[name] ?? 0);
  console.log(`| ${f.mode === 'cut' ? 'bodies cut at 64 KiB' : 'bodies whole (before)'} | ${MiB(f.perSession)} | ${k('records')} | ${k('events')} | ${k('queue')} | ${k('other')} | ${KiB(f.largestRecord)} | ${f.keys.toFixed(0)} | ${f.untimedAfterDelete} |`);
}
// Targets: a session costs at most 1 MiB of Redis whatever its bodies, no record over 128 KiB,
// at least 4× less than whole bodies, and after DELETE every key of it expires.
const targets: [string, boolean][] = [
  [`≤ 1 MiB per session with bodies cut (${MiB(cut.perSession)})`, cut.perSession <= 2 ** 20],
  [`largest record ≤ 128 KiB (${KiB(cut.largestRecord)})`, cut.largestRecord <= 128 * 1024],
  [`≥ 4× less than whole bodies (${(whole.perSession / cut.perSession).toFixed(1)}×)`, whole.perSession >= 4 * cut.perSession],
  [`every session key has a TTL after DELETE (${cut.untimedAfterDelete} without)`, cut.untimedAfterDelete === 0 && whole.untimedAfterDelete === 0],
];
for (const [what, ok] of targets) console.log(`${ok ? 'met' : 'NOT MET'}: ${what}`);
process.exit(targets.every(([, ok]) => ok) ? 0 : 1);
