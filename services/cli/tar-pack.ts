// A directory as a gzip'd tar stream, for `thinkflow submit --workspace DIR`:
// read file by file as the upload goes (never the whole tree in memory),
// everything included (`.git` too: the workspace is the repository). Regular
// files, directories and symbolic links are packed as they are; hard links
// become plain copies; sockets, FIFOs and devices are skipped (the server
// refuses them) and reported through `onSkip`.
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
// tar-stream: the tar format (ustar, pax headers for long names and link targets) from a maintained library, streamed entry by entry.
import tar, { type Pack } from 'tar-stream';

/** Resolves when the entry is written whole; tar-stream refuses a file whose bytes differ from the size its header says. */
async function packFile(pack: Pack, rel: string, abs: string, st: { size: number; mode: number; mtime: Date }): Promise<void> {
  let settle!: (err?: Error | null) => void;
  const done = new Promise<void>((resolve, reject) => {
    settle = (err) => (err ? reject(new Error(`${rel} changed while it was packed (${err.message})`)) : resolve());
  });
  const sink = pack.entry({ name: rel, size: st.size, mode: st.mode & 0o7777, mtime: st.mtime, type: 'file' }, (err) => settle(err));
  if (st.size > 0) {
    for await (const chunk of createReadStream(abs, { end: st.size - 1 }) as AsyncIterable<Buffer>) {
      if (!sink.write(chunk)) await once(sink as unknown as NodeJS.EventEmitter, 'drain');
    }
  }
  (sink as unknown as NodeJS.WritableStream).end();
  await done;
}

async function packTree(pack: Pack, root: string, rel: string, onSkip: (p: string, why: string) => void): Promise<void> {
  const names = (await readdir(rel ? path.join(root, rel) : root)).sort();
  for (const name of names) {
    const r = rel ? `${rel}/${name}` : name;
    const abs = path.join(root, r);
    const st = await lstat(abs);
    if (st.isDirectory()) {
      pack.entry({ name: `${r}/`, mode: st.mode & 0o7777, mtime: st.mtime, type: 'directory' });
      await packTree(pack, root, r, onSkip);
    } else if (st.isSymbolicLink()) {
      pack.entry({ name: r, mode: st.mode & 0o7777, mtime: st.mtime, type: 'symlink', linkname: await readlink(abs) });
    } else if (st.isFile()) {
      await packFile(pack, r, abs, st);
    } else {
      onSkip(r, 'not a regular file, directory or symbolic link');
    }
  }
}

/** The tree under `dir` as a tar.gz stream (paths relative to `dir`); a file that cannot be read fails the stream. */
export function packDirectory(dir: string, onSkip: (p: string, why: string) => void): Readable {
  const pack = tar.pack();
  const gz = createGzip();
  packTree(pack, dir, '', onSkip).then(
    () => pack.finalize(),
    (err: Error) => pack.destroy(err),
  );
  // pipeline() destroys the gzip stream with the pack's error, so the upload fails instead of hanging.
  pipeline(Readable.from(pack as AsyncIterable<Buffer>), gz, () => {});
  return gz;
}
