// Redis commands of N appends in one session, counted with MONITOR on a redis-server of its own
// (port 7401 + arg 2), by command type: run on two commits to compare (issue 22: the worker heartbeat
// must not add work per command). `npx tsx bench/liveness/monitor-count.ts 100 0`
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { loadConfig } from '../../services/config/index.ts';
import { startService } from '../../services/main/index.ts';
const N = Number(process.argv[2] ?? 100);
const port = 7401 + Number(process.argv[3] ?? 0);
const srv = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 500));
const url = `redis://127.0.0.1:${port}`;
const svc = await startService(loadConfig({ REDIS_URL: url, THINKFLOW_REDIS_PREFIX: 'mon', PORT: '0', THINKFLOW_SANDBOX_PREFIX: `mon${port}-`, THINKFLOW_API_KEYS: '' }), {});
const base = svc.url!;
const sid = ((await (await fetch(`${base}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json()) as { session_id: string }).session_id;
const post = (i: number) => fetch(`${base}/v1/sessions/${sid}/commands`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `<tf-append id="${i}" path="l">${i}\n</tf-append>` }).then((r) => r.text());
await post(0); // container up
const mon = new Redis(port, '127.0.0.1');
const counts = new Map<string, number>();
let total = 0;
const m = await mon.monitor();
m.on('monitor', (_t: string, args: string[]) => { total += 1; const k = String(args[0]).toLowerCase(); counts.set(k, (counts.get(k) ?? 0) + 1); });
const t0 = Date.now();
for (let i = 1; i <= N; i++) await post(i);
const ms = Date.now() - t0;
await new Promise((r) => setTimeout(r, 200));
m.disconnect();
console.log(JSON.stringify({ N, total, perCommand: total / N, ms, counts: Object.fromEntries([...counts].sort((a, b) => b[1] - a[1])) }));
await svc.close();
srv.kill('SIGKILL');
process.exit(0);
