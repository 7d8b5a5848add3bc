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

function previewOf(s: Sandboxes): NonNullable<Sandboxes['preview']> {
  if (!s.preview) throw new SandboxCallError('sandbox_unavailable', 'this worker has no sandbox workspaces to preview on');
  return s.preview.bind(s);
}

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

/**
 * A stream, with backpressure from the caller; the caller's end (or a stall)
 * destroys it, which ends its program. Frames are cut from what the source
 * gave while the previous frame was being written, not one per chunk:
 * docker's chunks are small, and each frame costs Redis a round trip.
 */
async function stream(c: OpContext, make: () => Promise<Readable>): Promise<void> {
  const source = await make();
  try {
    await c.writer.write({ t: 'H', head: { mailbox: c.mailbox, body: 'stream' } satisfies AnswerHead }, c.signal);
    // Half a window read ahead: one RPUSH carries it, while the source fills the next.
    const taken = buffered(source, Math.max(1, c.opts.window >> 1) * c.opts.frameBytes);
    for (let data = await taken.next(); data; data = await taken.next()) {
      await c.writer.writeMany([...slices(data, c.opts.frameBytes)].map((d) => ({ t: 'D' as const, data: d })), c.signal);
    }
    await c.writer.write({ t: 'E' }, c.signal);
  } finally {
    source.destroy();
  }
}

/** What `source` has given since the last `next()` (null at its end), read ahead up to `max` bytes, then paused. */
function buffered(source: Readable, max: number): { next(): Promise<Buffer | null> } {
  let parts: Buffer[] = [];
  let size = 0;
  let ended = false;
  let failed: Error | null = null;
  let wake: (() => void) | null = null;
  source.on('data', (b: Buffer) => {
    parts.push(b);
    size += b.length;
    if (size >= max) source.pause();
    wake?.();
  });
  source.once('end', () => { ended = true; wake?.(); });
  source.on('error', (err) => { failed = err; wake?.(); });
  return {
    async next() {
      while (size === 0 && !ended && !failed) await new Promise<void>((r) => { wake = r; });
      wake = null;
      if (failed) throw failed;
      if (size === 0) return null;
      const data = Buffer.concat(parts, size);
      parts = [];
      size = 0;
      source.resume();
      return data;
    },
  };
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
  // The worker's shutdown ends a preview at once (its sandbox is removed); the caller sees the refusal.
  preview: async (c, sid, [command]) => answer(c, await previewOf(c.sandboxes)(sid, command as Command, c.signal)),
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
