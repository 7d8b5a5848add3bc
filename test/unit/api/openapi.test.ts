import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { docApp, servedDocument } from './doc-app.ts';

// /openapi.json as the app serves it and generators and linters take it:
// Redocly's recommended rules pass with no error, openapi-typescript's types
// fit a small client, and every route the app has is in it.

const ROOT = new URL('../../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'tf-openapi-'));
const specFile = join(dir, 'openapi.json');
const served = await servedDocument();
writeFileSync(specFile, JSON.stringify(served, null, 2));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);

describe('OpenAPI document', () => {
  it('describes every route the app serves, with its path parameters (walks the app\'s routes)', () => {
    const routed = new Set<string>();
    for (const r of docApp().routes) {
      if (r.method === 'ALL') continue; // middleware
      // hono's `:name` and `:name{pattern}` are OpenAPI's `{name}`
      routed.add(`${r.method.toLowerCase()} ${r.path.replace(/:(\w+)(\{[^}]*\})?/g, '{$1}')}`);
    }
    expect(routed.size).toBeGreaterThan(20);
    const missing = [...routed].filter((key) => {
      const [method, path] = key.split(' ') as [string, string];
      return !served.paths[path]?.[method];
    });
    expect(missing).toEqual([]);
    for (const key of routed) {
      const [method, path] = key.split(' ') as [string, string];
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const declared = (served.paths[path]![method]!.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
      expect([key, declared.sort()]).toEqual([key, names.sort()]);
    }
  });

  it('documents no route the app does not serve', () => {
    const app = docApp();
    const routed = new Set(app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)(\{[^}]*\})?/g, '{$1}')}`));
    const documented = Object.entries(served.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
    expect(documented.filter((k) => !routed.has(k))).toEqual([]);
  });

  it('declares the answers of the bounds: cleanup_failed, too_many_commands, the turn cap, storage_full, path_changed, sandbox_unavailable, and the origin guard on every route', () => {
    type Answer = { description?: string; $ref?: string };
    const doc = served as unknown as { paths: Record<string, Record<string, { responses: Record<string, Answer> }>>; components: { responses?: Record<string, Answer> } };
    const shared = doc.components.responses ?? {};
    const text = (a: Answer | undefined) => (a?.$ref ? shared[a.$ref.split('/').pop()!]?.description : a?.description) ?? '';
    const answers = (path: string, method: string) => doc.paths[path]![method]!.responses;
    expect(text(answers('/v1/sessions/{id}', 'delete')[503])).toContain('cleanup_failed');
    const commands = answers('/v1/sessions/{id}/commands', 'post');
    expect(text(commands[413])).toContain('too_many_commands');
    expect(text(commands[429])).toContain('THINKFLOW_MAX_TURNS_PER_KEY');
    for (const [path, method] of [['/v1/sessions', 'post'], ['/v1/sessions/{id}/commands', 'post'], ['/v1/jobs', 'post'], ['/v1/sessions/{id}', 'delete']] as const) {
      expect([path, method, text(answers(path, method)[503])]).toEqual([path, method, expect.stringContaining('storage_full')]);
    }
    for (const [path, method] of [['/v1/sessions/{id}/ledger', 'get'], ['/v1/sessions/{id}/commands', 'post'], ['/v1/jobs', 'get']] as const) {
      expect([path, method, text(answers(path, method)[503])]).toEqual([path, method, expect.stringMatching(/redis_unavailable.*shutting_down/)]);
    }
    for (const path of ['/v1/sessions/{id}/files', '/v1/sessions/{id}/files/{path}']) {
      expect(text(answers(path, 'get')[409])).toContain('path_changed');
      expect(text(answers(path, 'get')[503])).toContain('sandbox_unavailable');
    }
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        expect([path, method, text(op.responses[421])]).toEqual([path, method, expect.stringContaining('host_not_allowed')]);
        expect([path, method, text(op.responses[403])]).toEqual([path, method, expect.stringMatching(/cross_origin_refused.*client_header_required/)]);
      }
    }
  });

  it('passes `redocly lint` with the recommended rules: no error, and none of servers / operationId / 4xx / unused-component problems', () => {
    const r = spawnSync(bin('redocly'), ['lint', specFile, '--extends', 'recommended', '--format', 'json'], { encoding: 'utf8', timeout: 60_000 });
    const report = JSON.parse(r.stdout.slice(r.stdout.indexOf('{'))) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; severity: string; message: string }[] };
    expect(report.problems.filter((p) => p.severity === 'error')).toEqual([]);
    expect(report.totals.errors).toBe(0);
    const named = ['no-empty-servers', 'operation-operationId', 'operation-4xx-response', 'no-unused-components', 'operation-operationId-unique'];
    expect(report.problems.filter((p) => named.includes(p.ruleId))).toEqual([]);
    expect(r.status).toBe(0);
  }, 60_000);

  it('generates TypeScript types with openapi-typescript that a small client type-checks against', () => {
    const typesFile = join(dir, 'api.d.ts');
    execFileSync(bin('openapi-typescript'), [specFile, '-o', typesFile], { stdio: 'pipe', timeout: 60_000 });
    writeFileSync(join(dir, 'client.ts'), `
import type { components, paths } from './api.d.ts';

type SubmitBody = paths['/v1/jobs']['post']['requestBody']['content']['application/json'];
type Submitted = paths['/v1/jobs']['post']['responses']['202']['content']['application/json'];
type JobView = components['schemas']['JobView'];
type Ledger = paths['/v1/sessions/{id}/ledger']['get']['responses']['200']['content']['application/json'];
type ApiError = components['schemas']['Error'];

export async function submit(base: string, body: SubmitBody): Promise<Submitted> {
  const res = await fetch(base + '/v1/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(((await res.json()) as ApiError).error.code);
  return (await res.json()) as Submitted;
}

export function describeJob(job: JobView): string {
  const seeded: { path: string; bytes: number }[] = job.files_seeded;
  const tokens: number = job.usage.total_tokens;
  const estimated: boolean | undefined = job.usage.estimated;
  return job.status + ' ' + tokens + (estimated ? ' (estimated)' : '') + ' ' + seeded.length + ' ' + job.commands.failed;
}

export function failedIds(ledger: Ledger): string[] {
  return ledger.entries.filter((e) => e.status === 'failed').map((e) => e.id);
}

const body: SubmitBody = { task: 'Create a Vite project skeleton', flow: 'react', limits: { max_turns: 4 }, files: { 'a.md': '# A' } };
void submit('http://127.0.0.1:8080', body).then((s) => s.job_id.toUpperCase());
// The types are real, not \`any\`: a wrong flow and a missing task do not compile.
// @ts-expect-error flow is thinkflow | react
const wrongFlow: SubmitBody = { task: 'x', flow: 'other' };
// @ts-expect-error task is required
const noTask: SubmitBody = { flow: 'react' };
void wrongFlow; void noTask;
`);
    const tsc = spawnSync(bin('tsc'), ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--allowImportingTsExtensions', '--types', 'node', join(dir, 'client.ts')], { encoding: 'utf8', timeout: 120_000, cwd: ROOT });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
  }, 120_000);
});
