// `thinkflow submit "TASK" [...]`: posts an unattended job (POST /v1/jobs)
// and, with --wait, follows its events to job_finished. Exit 0 when the job
// succeeded, 1 when it failed or was cancelled (or the API could not be used),
// 2 for bad arguments, 130 on Ctrl-C — which stops only the watching: the job
// is unattended by design and keeps running on the server.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { JobView } from '../../jobs/index.ts';
import type { PublicApproval, StreamEvent } from '../../pipeline/index.ts';
import { isToolName, targetOf } from '../../protocol/index.ts';
import {
  ApiClient, CliError, CONNECTION_OPTIONS, jobStreamEvent, oneLine, resolveConnection, UsageError,
  type Connection, type JobRequestInput,
} from '../api-client.ts';
import { prepareWorkspace, type WorkspaceArgs } from './workspace-arg.ts';
import { downloadResults, type DownloadTargets } from './download.ts';

const USAGE = 'usage: thinkflow submit "TASK" [--approval never|on-request] [--project P] [--flow thinkflow|react]\n'
  + '                        [--file path=localfile ...] [--workspace DIR|FILE.tar.gz] [--session ID]\n'
  + '                        [--max-turns N] [--timeout S] [--validate CMD] [--idempotency-key K] [--wait] [--json] [--url URL] [--key KEY]\n'
  + '                        [--out FILE.tar.gz] [--patch FILE]   (both wait for the job, then download its workspace / patch)\n';

type Args = {
  request: JobRequestInput; wait: boolean; json: boolean; conn: Connection; idempotencyKey?: string; workspace: WorkspaceArgs; downloads: DownloadTargets;
};

function wholeNumber(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < 1) throw new UsageError(`--${flag} must be a whole number >= 1, got '${raw}'`);
  return n;
}

async function readArgs(args: string[]): Promise<Args> {
  let parsed;
  try {
    parsed = parseArgs({
      args, allowPositionals: true,
      options: {
        ...CONNECTION_OPTIONS,
        approval: { type: 'string' }, project: { type: 'string' }, flow: { type: 'string' },
        file: { type: 'string', multiple: true }, 'max-turns': { type: 'string' }, timeout: { type: 'string' }, validate: { type: 'string' },
        wait: { type: 'boolean', default: false }, json: { type: 'boolean', default: false }, 'idempotency-key': { type: 'string' },
        workspace: { type: 'string' }, session: { type: 'string' },
        out: { type: 'string' }, patch: { type: 'string' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const v = parsed.values;
  const [task, ...extra] = parsed.positionals;
  if (task === undefined || task.trim() === '') throw new UsageError('a TASK is required');
  if (extra.length > 0) throw new UsageError(`one TASK only (quote it); unexpected '${extra[0]}'`);
  if (v.approval !== undefined && v.approval !== 'never' && v.approval !== 'on-request') throw new UsageError(`--approval must be never or on-request, got '${v.approval}'`);
  if (v.flow !== undefined && v.flow !== 'thinkflow' && v.flow !== 'react') throw new UsageError(`--flow must be thinkflow or react, got '${v.flow}'`);
  const request: JobRequestInput = { task };
  if (v.project !== undefined) request.project = v.project;
  if (v.approval !== undefined) request.approval = v.approval;
  if (v.flow !== undefined) request.flow = v.flow;
  if (v.validate !== undefined) {
    if (v.validate.trim() === '') throw new UsageError('--validate takes a command, got an empty one');
    request.validate = { cmd: v.validate };
  }
  const maxTurns = wholeNumber('max-turns', v['max-turns']);
  const timeout = wholeNumber('timeout', v.timeout);
  if (maxTurns !== undefined || timeout !== undefined) {
    request.limits = { ...(maxTurns !== undefined ? { max_turns: maxTurns } : {}), ...(timeout !== undefined ? { timeout_s: timeout } : {}) };
  }
  if (v.file?.length) {
    const files: Record<string, string> = {};
    for (const spec of v.file) {
      const eq = spec.indexOf('=');
      if (eq <= 0 || eq === spec.length - 1) throw new UsageError(`--file takes path=localfile, got '${spec}'`);
      const [path, local] = [spec.slice(0, eq), spec.slice(eq + 1)];
      if (path in files) throw new UsageError(`--file ${path} given twice`);
      files[path] = await readFile(local, 'utf8').catch((err: NodeJS.ErrnoException) => {
        throw new UsageError(`--file ${spec}: cannot read ${local} (${err.code ?? err.message})`);
      });
    }
    request.files = files;
  }
  const key = v['idempotency-key'];
  // The server's bounds, checked here so a typo is a usage error, not a request.
  if (key !== undefined && !/^[\x20-\x7e]{1,255}$/.test(key)) throw new UsageError('--idempotency-key must be 1 to 255 printable ASCII characters');
  if (v.session !== undefined && v.session.trim() === '') throw new UsageError('--session needs a session id');
  const workspace = { workspace: v.workspace, session: v.session };
  const downloads: DownloadTargets = { ...(v.out ? { out: v.out } : {}), ...(v.patch ? { patch: v.patch } : {}) };
  const wait = v.wait || Boolean(v.out || v.patch);
  return { request, wait, json: v.json, conn: resolveConnection(v), workspace, downloads, ...(key !== undefined ? { idempotencyKey: key } : {}) };
}

type Target = { tool?: string; path?: string | null; dest?: string | null; cmd?: string | null };

/** A tool this CLI knows shows its target as the service does; another (a newer server) shows what it has. */
const shownTarget = (c: Target) => oneLine(c.tool !== undefined && isToolName(c.tool) ? targetOf({ ...c, tool: c.tool }) : c.path ?? c.cmd ?? '', 70);

/** The human progress view: one stderr line per step worth knowing; the model's text summarized per turn. */
class Progress {
  #text = '';
  constructor(readonly conn: Connection) {}

  #say(line: string): void {
    process.stderr.write(`${line}\n`);
  }

  #flushText(): void {
    if (this.#text.trim() !== '') this.#say(`  text: "${oneLine(this.#text, 100)}" (${this.#text.length} chars)`);
    this.#text = '';
  }

  show(e: StreamEvent): void {
    switch (e.type) {
      case 'turn_started': return this.#say(`── turn ${e.turn} (api call ${e.api_call})`);
      case 'text_delta': this.#text += e.text ?? ''; return;
      case 'command_parsed': return this.#say(`  [${e.command?.id}] parsed     ${e.command?.tool}  ${shownTarget(e.command ?? {})}`);
      case 'command_finished': {
        const r = e.record;
        if (!r) return;
        const extra = [r.exit_code != null ? `exit ${r.exit_code}` : '', r.duration_ms != null ? `${Math.round(r.duration_ms)} ms` : '', r.error ? oneLine(r.error, 80) : ''].filter(Boolean).join(', ');
        return this.#say(`  [${r.id}] ${r.status.padEnd(10)} ${r.tool}  ${shownTarget(r)}${extra ? `  (${extra})` : ''}`);
      }
      case 'parse_error': return this.#say(`  parse error (${e.stream}): ${e.error?.code}: ${e.error?.message}${e.error?.id ? ` [command ${e.error.id}]` : ''}`);
      case 'message_added': return this.#say(`  message${e.interrupt ? ' (interrupt)' : ''}: "${oneLine(e.text, 90)}"`);
      case 'job_paused': return this.#say('  paused: no new model call or command starts until resume');
      case 'job_resumed': return this.#say('  resumed');
      case 'approval_requested': return this.#approvalRequested(e.approval);
      case 'approval_resolved': {
        const a = e.approval;
        return this.#say(`  [${a?.command_id}] approval ${a?.status ?? 'answered'}${a?.decided_by ? ` by ${a.decided_by}` : ''}${a?.reason ? `: ${oneLine(a.reason, 80)}` : ''}`);
      }
      case 'turn_ended':
        this.#flushText();
        return this.#say(`  turn ${e.turn} ended: ${e.outcome}`);
      case 'validation_started': return this.#say(`── validation ${e.round}/${e.max_rounds}: ${oneLine(e.cmd, 70)}`);
      case 'validation_finished':
        return this.#say(`  validation ${e.round}/${e.max_rounds} ${e.passed ? 'passed' : `failed (${e.status}${e.exit_code != null ? `, exit ${e.exit_code}` : ''})`}`);
      case 'job_finished': return this.#flushText();
      default: return;
    }
  }

  #approvalRequested(a: PublicApproval | undefined): void {
    if (!a) return;
    const url = this.conn.explicitUrl ? ` --url ${this.conn.url}` : '';
    const rules = a.matched_rules?.map((m) => m.id).join(', ') || 'default';
    this.#say(`  [${a.command_id}] needs approval  ${a.tool}  ${oneLine(a.target, 70)}  (rules: ${rules})`);
    this.#say(`      token ${a.token}`);
    this.#say(`      approve: thinkflow approve ${a.token}${url}    reject: thinkflow reject ${a.token}${url} --reason "…"`);
  }
}

function finalReport(job: JobView): string {
  const u = job.usage;
  const c = job.commands;
  const lines = [
    `status     ${job.status}`,
    `job        ${job.job_id}  (session ${job.session_id})`,
    `model      ${job.model}${job.model_source === 'replay' ? '  (the built-in replay model: a scripted demo, not a live model)' : ''}`,
    `api_calls  ${job.api_calls}  (turns ${job.turns})`,
    `usage      prompt ${u.prompt_tokens}, completion ${u.completion_tokens}, total ${u.total_tokens} tokens${u.estimated ? ' (estimated)' : ''}`,
    `commands   ${c.total} total: ${c.succeeded} succeeded, ${c.failed} failed, ${c.skipped} skipped, ${c.forbidden} forbidden, ${c.rejected} rejected`,
  ];
  if (job.validation) lines.push(`validation ${job.validation.passed ? 'passed' : 'not passed'} after ${job.validation.rounds} round${job.validation.rounds === 1 ? '' : 's'}  (${oneLine(job.validate?.cmd ?? '', 60)})`);
  if (job.error) lines.push(`error      ${job.error}`);
  lines.push('final_text', job.final_text ? job.final_text.replace(/^/gm, '  ') : '  (none)');
  return lines.join('\n') + '\n';
}

export async function follow(client: ApiClient, conn: Connection, jobId: string, json: boolean, signal: AbortSignal): Promise<number> {
  const progress = new Progress(conn);
  let finished: JobView | undefined;
  const stream = client.events(jobId, {
    signal,
    onReconnect: ({ attempt, lastEventId, reason }) => process.stderr.write(`  (${reason}; reconnecting after event ${lastEventId || 'none'}, attempt ${attempt})\n`),
  });
  for await (const raw of stream) {
    const { id, name, data, event } = jobStreamEvent(raw);
    if (json) process.stdout.write(`${JSON.stringify({ id, event: name, data })}\n`);
    else progress.show(event);
    // the stream's copy of the job view is the jobs layer's JobView (the event union checks only its ids and status)
    if (event.type === 'job_finished') finished = event.job as unknown as JobView;
  }
  // The job resource is the authority; the event's copy covers an API that cannot be read back.
  const job = await client.getJob(jobId).catch((err) => {
    if (finished) return finished;
    throw err;
  });
  process.stdout.write(json ? `${JSON.stringify(job)}\n` : finalReport(job));
  return job.status === 'succeeded' ? 0 : 1;
}

export async function submitMain(args: string[]): Promise<number> {
  let a: Args;
  try {
    a = await readArgs(args);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`thinkflow submit: ${err.message}\n${USAGE}`);
    return 2;
  }
  const client = new ApiClient(a.conn);
  const ac = new AbortController();
  const onSigint = () => ac.abort();
  let jobId: string | undefined;
  try {
    const uploaded = await prepareWorkspace(client, a.workspace, a.request, (line) => process.stderr.write(`${line}\n`), a.idempotencyKey);
    if (uploaded && !a.json) process.stderr.write(`workspace: ${uploaded.files} files, ${uploaded.bytes} bytes uploaded to session ${a.request.session_id}\n`);
    const job = await client.submitJob(a.request, a.idempotencyKey);
    jobId = job.job_id;
    const urls = { job_url: client.jobUrl(job.job_id), events_url: client.eventsUrl(job.job_id) };
    if (a.json) process.stdout.write(`${JSON.stringify({ ...job, ...urls, ...(uploaded ? { workspace: uploaded } : {}) })}\n`);
    else process.stdout.write(`job_id     ${job.job_id}\nsession_id ${job.session_id}\nstatus     ${job.status}\njob        ${urls.job_url}\nevents     ${urls.events_url}\n`);
    if (!a.wait) return 0;
    process.on('SIGINT', onSigint);
    const code = await follow(client, a.conn, job.job_id, a.json, ac.signal);
    // Whatever the outcome: a failed job's partial result is worth seeing too.
    await downloadResults(client, job.session_id, a.downloads);
    return code;
  } catch (err) {
    if (ac.signal.aborted && jobId !== undefined) {
      const auth = a.conn.key ? ' -H "Authorization: Bearer $THINKFLOW_API_KEY"' : '';
      process.stderr.write(`\nstopped watching; job ${jobId} is still running on the server.\n`
        + `  status: curl${auth} ${client.jobUrl(jobId)}\n`
        + `  cancel: thinkflow cancel ${jobId}${a.conn.explicitUrl ? ` --url ${a.conn.url}` : ''}   (or curl -X POST${auth} ${client.jobUrl(jobId)}/cancel)\n`);
      return 130;
    }
    if (err instanceof CliError) {
      process.stderr.write(`thinkflow submit: ${err.message}\n`);
      return 1;
    }
    // A --workspace that turned out unreadable is the caller's input.
    if (err instanceof UsageError) {
      process.stderr.write(`thinkflow submit: ${err.message}\n${USAGE}`);
      return 2;
    }
    throw err;
  } finally {
    process.off('SIGINT', onSigint);
  }
}
