import { Readable } from 'node:stream';
import type { Command } from '../../protocol/index.ts';
import type { ExecuteOptions, UploadOptions, WorkspaceFormat } from '../../sandbox/index.ts';
import type { Sandboxes, WorkspaceOut } from '../sandboxes.ts';
import { fromWire, SandboxCallError } from './errors.ts';
import { slices, type AnswerHead } from './frames.ts';
import type { PipeReader, PipeWriter } from './pipe.ts';
import type { ResolvedCallOptions } from './options.ts';

// The worker's side of each call: the local `Sandboxes` verb it stands for,
// and how its answer goes back (a value, a file's bytes, a stream). One
// entry per operation; the caller (remote-sandboxes.ts) names them the same.

export type OpContext = {
  sandboxes: Sandboxes;
  /** how an upload into this session is judged (the serving worker's own policy gate) */
  uploadOptions: (sid: string) => Promise<UploadOptions>;
  writer: PipeWriter;
  /** the call's `up` pipe (uploads), read with backpressure */
  up: () => PipeReader;
  mailbox: string;
  opts: ResolvedCallOptions;
  signal: AbortSignal;
};

type Op = (c: OpContext, sid: string, args: unknown[]) => Promise<void>;

function workspaceOf(s: Sandboxes): WorkspaceOut {
  if (!s.workspace) throw new SandboxCallError('sandbox_unavailable', 'this worker has no sandbox workspaces to read');
  return s.workspace;
}

/** A value: in the head when it fits one frame, else as a JSON body. */
export async function answer(c: OpContext, value: unknown): Promise<void> {
  const json = Buffer.from(JSON.stringify(value ?? null));
  if (json.length <= c.opts.frameBytes) return c.writer.write({ t: 'H', head: { mailbox: c.mailbox, value } }, c.signal);
  await c.writer.write({ t: 'H', head: { mailbox: c.mailbox, body: 'json' } }, c.signal);
  await body(c, json);
}

async function body(c: OpContext, data: Buffer): Promise<void> {
  for (const d of slices(data, c.opts.frameBytes)) await c.writer.write({ t: 'D', data: d }, c.signal);
  await c.writer.write({ t: 'E' }, c.signal);
}

/** A stream, with backpressure from the caller; the caller's end (or a stall) destroys it, which ends its program. */
async function stream(c: OpContext, make: () => Promise<Readable>): Promise<void> {
  const source = await make();
  try {
    await c.writer.write({ t: 'H', head: { mailbox: c.mailbox, body: 'stream' } satisfies AnswerHead }, c.signal);
    for await (const chunk of source) {
      for (const data of slices(chunk as Buffer, c.opts.frameBytes)) await c.writer.write({ t: 'D', data }, c.signal);
    }
    await c.writer.write({ t: 'E' }, c.signal);
  } finally {
    source.destroy();
  }
}

/** The upload's body, read off the `up` pipe: `X` is the caller's body failing, a stall a caller gone. */
function upBody(c: OpContext): { body: Readable; close: () => void } {
  const reader = c.up();
  const body = new Readable({
    highWaterMark: c.opts.frameBytes,
    read() {
      reader.next(Date.now() + c.opts.stallMs, c.signal).then((f) => {
        if (!f) return this.destroy(new SandboxCallError('sandbox_timeout', `the upload's sender sent nothing for ${c.opts.stallMs} ms`));
        if (f.t === 'D') return void this.push(f.data);
        if (f.t === 'E') return void this.push(null);
        this.destroy(f.t === 'X' ? fromWire(f.error) : new Error(`sandbox call: unexpected frame ${f.t} in an upload`));
      }, (err: Error) => this.destroy(err));
    },
  });
  return { body, close: () => reader.close() };
}

export const OPS: Record<string, Op> = {
  execute: async (c, sid, [command, opts]) => answer(c, await c.sandboxes.execute(sid, command as Command, opts as ExecuteOptions)),
  readPath: async (c, sid, [path]) => {
    const r = await c.sandboxes.readPath(sid, String(path));
    if (r.kind !== 'file') return answer(c, r);
    await c.writer.write({ t: 'H', head: { mailbox: c.mailbox, value: { kind: 'file' }, body: 'bytes' } }, c.signal);
    await body(c, r.bytes);
  },
  resolvePaths: async (c, sid, [paths]) => answer(c, await c.sandboxes.resolvePaths(sid, paths as string[])),
  cancelRunning: async (c, sid) => answer(c, await c.sandboxes.cancelRunning(sid)),
  remove: async (c, sid) => answer(c, await c.sandboxes.remove(sid)),
  ping: async (c) => answer(c, await c.sandboxes.ping()),
  archive: (c, sid, [format]) => stream(c, () => workspaceOf(c.sandboxes).archive(sid, format as WorkspaceFormat)),
  patch: (c, sid) => stream(c, () => workspaceOf(c.sandboxes).patch(sid)),
  changes: async (c, sid) => answer(c, await workspaceOf(c.sandboxes).changes(sid)),
  setBaseline: async (c, sid) => answer(c, await workspaceOf(c.sandboxes).setBaseline(sid)),
  ensureBaseline: async (c, sid) => answer(c, await workspaceOf(c.sandboxes).ensureBaseline(sid)),
  upload: async (c, sid) => {
    await c.writer.write({ t: 'A', mailbox: c.mailbox }, c.signal);
    const { body, close } = upBody(c);
    try {
      await answer(c, await c.sandboxes.uploadWorkspace(sid, body, await c.uploadOptions(sid)));
    } finally {
      body.destroy();
      close();
    }
  },
};
