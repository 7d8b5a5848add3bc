// npm run bench:workspace:calls — what the Redis hop of sandbox calls
// (pipeline/sandbox-calls, issue 22) costs against role=all's in-process
// sandbox, side by side in one run: the same session read through an `all`
// service (direct) and through an `api` service (no Docker: calls served by
// the `all` one's worker side). Both services live in this process, on one
// Redis and Docker; p50 of GET …/files (4 KiB), GET …/changes and the MB/s
// of GET …/workspace?format=tar (64 MiB of random bytes).
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../services/config/index.ts';
import { startService, type ServiceHandle } from '../../services/main/index.ts';
import { createRedis, deleteByPattern } from '../../services/pipeline/index.ts';

const N = Number(process.env.BENCH_N ?? 200);
const prefix = `tfbench-calls-${randomBytes(3).toString('hex')}`;
const boxes = `tfbench-calls-${randomBytes(3).toString('hex')}-`;
const env = {
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_SANDBOX_PREFIX: boxes, PORT: '0',
  THINKFLOW_LOG_LEVEL: 'warn', THINKFLOW_MAX_TURNS_PER_KEY: '64',
  ...(process.env.THINKFLOW_SANDBOX_IMAGE ? { THINKFLOW_SANDBOX_IMAGE: process.env.THINKFLOW_SANDBOX_IMAGE } : {}),
};

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function timed(url: string, n: number): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await fetch(url);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
    ms.push(performance.now() - t0);
  }
  return p50(ms);
}

async function mbps(url: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url);
  let bytes = 0;
  for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) bytes += c.length;
  return bytes / 1024 / 1024 / ((performance.now() - t0) / 1000);
}

async function main(): Promise<void> {
  const all: ServiceHandle = await startService(loadConfig({ ...env, THINKFLOW_ROLE: 'all' }));
  const api: ServiceHandle = await startService(loadConfig({ ...env, THINKFLOW_ROLE: 'api' }));
  try {
    const made = await fetch(`${all.url}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ files: { 'small.txt': 'x'.repeat(4096) } }) });
    const sid = ((await made.json()) as { session_id: string }).session_id;
    const cmd = 'head -c 67108864 /dev/urandom > big.bin';
    await fetch(`${all.url}/v1/sessions/${sid}/commands`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `<tf-bash id="1" cmd="${cmd}" />` });
    const rows: string[] = ['| path | role=all (in-process) | role=api (through a worker) |', '|---|---|---|'];
    for (const [name, path, n] of [['GET …/files/small.txt p50 ms', `/v1/sessions/${sid}/files/small.txt`, N], ['GET …/changes p50 ms', `/v1/sessions/${sid}/changes`, Math.ceil(N / 4)]] as const) {
      await timed(`${all.url}${path}`, 5);
      await timed(`${api.url}${path}`, 5);
      rows.push(`| ${name} | ${(await timed(`${all.url}${path}`, n)).toFixed(2)} | ${(await timed(`${api.url}${path}`, n)).toFixed(2)} |`);
    }
    const tar = `/v1/sessions/${sid}/workspace?format=tar`;
    const direct = Math.max(await mbps(`${all.url}${tar}`), await mbps(`${all.url}${tar}`));
    const remote = Math.max(await mbps(`${api.url}${tar}`), await mbps(`${api.url}${tar}`));
    rows.push(`| GET …/workspace?format=tar (64 MiB) MB/s, best of 2 | ${direct.toFixed(0)} | ${remote.toFixed(0)} |`);
    console.log(rows.join('\n'));
    await fetch(`${all.url}/v1/sessions/${sid}`, { method: 'DELETE' });
  } finally {
    await api.close();
    await all.close();
    const r = createRedis(env.REDIS_URL, 'bench-cleanup');
    await deleteByPattern(r, `${prefix}:*`);
    r.disconnect();
  }
}

await main();
process.exit(0);
