// The main job end to end: make sure `thinkflow serve` answers (start it in the
// background when it does not), submit the demo job, follow its progress,
// then print the result, the ledger and where to look next.
// Run through `npm run demo`, which first sets the machine up.
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, writeFileSync } from 'node:fs';
import { ledgerSummary } from '../services/agent/index.ts';
import { loadClient, type ApiClient } from '../services/cli/index.ts';
import type { LedgerRecord } from '../services/pipeline/index.ts';
import { DEMO_TASK, REVIEW_POLICY, REVIEW_TASK } from '../services/replay-model/index.ts';

const cli = await loadClient();
const port = process.env.PORT ?? '8080';
const conn = cli.resolveConnection({ url: process.env.THINKFLOW_URL ?? `http://127.0.0.1:${port}` });
const client = new cli.ApiClient(conn);
const say = (line = '') => process.stdout.write(`${line}\n`);

async function ready(): Promise<boolean> {
  try {
    return (await fetch(`${conn.url}/readyz`, { signal: AbortSignal.timeout(2000) })).ok;
  } catch {
    return false;
  }
}

async function ensureService(): Promise<void> {
  if (await ready()) {
    say(`using the ThinkFlow service already running at ${conn.url}`);
    return;
  }
  mkdirSync('.tmp', { recursive: true });
  const log = openSync('.tmp/serve.log', 'a');
  const child = spawn(process.execPath, ['bin/thinkflow.mjs', 'serve', '--port', port], { detached: true, stdio: ['ignore', log, log], env: process.env });
  child.unref();
  writeFileSync('.tmp/serve.pid', String(child.pid));
  say(`started thinkflow serve in the background (pid ${child.pid}, log .tmp/serve.log)`);
  for (let i = 0; i < 120; i++) {
    if (await ready()) return;
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`the service did not become ready at ${conn.url}; see .tmp/serve.log`);
}

await ensureService();
say();
say(`submitting the demo job: "${DEMO_TASK}"`);
const submitted = await client.submitJob({ task: DEMO_TASK });
say(`job ${submitted.job_id} (session ${submitted.session_id}) ${submitted.status}`);
say();
const code = await cli.follow(client, conn, submitted.job_id, false, new AbortController().signal);
const res = await fetch(`${conn.url}/v1/sessions/${submitted.session_id}/ledger`, { headers: conn.key ? { authorization: `Bearer ${conn.key}` } : {} });
const { entries } = (await res.json()) as { entries: LedgerRecord[] };
say();
say(`ledger (${entries.length} commands, in execution order):`);
for (const line of ledgerSummary(entries)) say(`  ${line}`);
say();
say('where to look next:');
say(`  job:      curl -s ${client.jobUrl(submitted.job_id)}`);
say(`  events:   curl -sN ${client.eventsUrl(submitted.job_id)}     (SSE; add -H 'Last-Event-ID: N' to resume)`);
say(`  ledger:   curl -s ${conn.url}/v1/sessions/${submitted.session_id}/ledger`);
say(`  a file:   curl -s ${conn.url}/v1/sessions/${submitted.session_id}/files/package.json`);
say(`  API:      curl -s ${conn.url}/openapi.json`);
say();
// A second job for the dashboard: on-request, so its docs/ changes and its
// check script wait for an operator (see REVIEW_POLICY).
const review = await client.submitJob({ task: REVIEW_TASK, approval: 'on-request', policy: REVIEW_POLICY } as Parameters<ApiClient['submitJob']>[0]);
say(`a second job waits for an operator: ${review.job_id} (approval on-request)`);
say(`  dashboard: open ${conn.url}/dashboard in a browser and sign in with an operator key`);
say(`             (dev mode, THINKFLOW_API_KEYS unset: any text signs in as admin from this machine)`);
say(`  or:        npx thinkflow approvals   then   npx thinkflow approve TOKEN`);
say('  the service keeps running; stop it with: npm run stop');
process.exitCode = code;
