import type { Command } from '../../../services/protocol/command.ts';
import type { Sandboxes } from '../../../services/pipeline/sandboxes.ts';
import type { Readable } from 'node:stream';
import type { ExecutionResult, ReadPathResult, UploadResult } from '../../../services/sandbox/index.ts';

// An in-memory Sandboxes for the pipeline core tests: files per session and a
// tiny `bash` (`sleep S`, `exit N`, `echo …`, `rm F`, `true`, `false`, joined by `;`).
// It logs every execution so tests can check order and "never run twice".

export class FakeSandboxes implements Sandboxes {
  readonly files = new Map<string, Map<string, string>>();
  readonly log: { sid: string; id: string; tool: string; at: number }[] = [];
  removed: string[] = [];
  /** Sessions whose running commands were cancelled (a worker took over from a dead one). */
  cancelled: string[] = [];

  #fs(sid: string): Map<string, string> {
    let fs = this.files.get(sid);
    if (!fs) this.files.set(sid, (fs = new Map()));
    return fs;
  }

  async uploadWorkspace(_sid: string, _body: Readable): Promise<UploadResult> {
    throw new Error('the fake executor does not take workspace uploads (test/integration/api covers them on Docker)');
  }

  async execute(sid: string, c: Command, opts?: { signal?: AbortSignal }): Promise<ExecutionResult> {
    const t0 = Date.now();
    this.log.push({ sid, id: c.id, tool: c.tool, at: t0 });
    const fs = this.#fs(sid);
    const ok = (extra: Partial<ExecutionResult> = {}): ExecutionResult =>
      ({ ok: true, tool: c.tool, duration_ms: Date.now() - t0, ...extra });
    const fail = (error: string, code: string, extra: Partial<ExecutionResult> = {}): ExecutionResult =>
      ({ ok: false, tool: c.tool, duration_ms: Date.now() - t0, error, error_code: code, ...extra });
    const p = c.path ?? '';
    switch (c.tool) {
      case 'write':
        if (!c.content && !c.allow_empty) return fail('empty content', 'empty_content');
        fs.set(p, c.content ?? '');
        return ok({ path: p, bytes_written: Buffer.byteLength(c.content ?? '') });
      case 'append':
        if (!c.content) return fail('empty content', 'empty_content');
        fs.set(p, (fs.get(p) ?? '') + c.content);
        return ok({ path: p, bytes_written: Buffer.byteLength(c.content) });
      case 'mkdir': case 'touch':
        if (!fs.has(p)) fs.set(p, '');
        return ok({ path: p });
      case 'copy':
        if (!fs.has(p)) return fail(`${p}: no such file`, 'not_found');
        fs.set(c.dest ?? '', fs.get(p)!);
        return ok({ path: p });
      case 'read':
        if (!fs.has(p)) return fail(`${p}: no such file`, 'not_found');
        return ok({ path: p, stdout: fs.get(p)! });
      case 'edit': {
        const cur = fs.get(p);
        if (cur === undefined) return fail(`${p}: no such file`, 'not_found');
        if (cur.split(c.old_text ?? '').length !== 2) return fail('old text must occur exactly once', 'edit_mismatch');
        fs.set(p, cur.replace(c.old_text ?? '', c.new_text ?? ''));
        return ok({ path: p });
      }
      case 'bash': {
        let stdout = '';
        for (const part of (c.cmd ?? '').split(';').map((s) => s.trim()).filter(Boolean)) {
          const [word, ...args] = part.split(/\s+/);
          if (word === 'sleep') await sleep(Number(args[0]) * 1000, opts?.signal);
          else if (word === 'echo') stdout += `${args.join(' ')}\n`;
          else if (word === 'rm') { for (const a of args.filter((x) => !x.startsWith('-'))) fs.delete(a); }
          else if (word === 'false') return fail('exit code 1', 'exit_code', { exit_code: 1, stdout });
          else if (word === 'exit' && Number(args[0]) !== 0) return fail(`exit code ${args[0]}`, 'exit_code', { exit_code: Number(args[0]), stdout });
          else if (word !== 'true' && word !== 'exit') return fail(`${word}: command not found`, 'exit_code', { exit_code: 127, stdout });
        }
        return ok({ stdout, exit_code: 0 });
      }
      default:
        return fail(`unknown tool ${JSON.stringify(c.tool)}`, 'bad_request');
    }
  }

  async readPath(sid: string, path: string): Promise<ReadPathResult> {
    const v = this.#fs(sid).get(path);
    return v === undefined ? { kind: 'missing' } : { kind: 'file', bytes: Buffer.from(v) };
  }

  /** No symlinks in memory: every path resolves to itself. */
  async resolvePaths(_sid: string, paths: string[]): Promise<(string | null)[]> { return paths; }
  async cancelRunning(sid: string): Promise<number> { this.cancelled.push(sid); return 0; }
  async remove(sid: string): Promise<void> { this.removed.push(sid); this.files.delete(sid); }
  async ping(): Promise<boolean> { return true; }
  async close(): Promise<void> {}
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}
