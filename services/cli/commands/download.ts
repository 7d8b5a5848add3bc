// `thinkflow submit … --out FILE.tar.gz --patch FILE`: once the job is final,
// its workspace (GET …/workspace) and its patch (GET …/changes?format=patch)
// are written to local files, streamed (never held whole), each first to
// FILE.part and renamed when complete, so a broken download leaves no
// truncated FILE behind.
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { CliError, type ApiClient } from '../api-client.ts';

export type DownloadTargets = { out?: string; patch?: string };

/** The API path of the workspace archive for a local file name: `.tar` asks for a plain tar, anything else for tar.gz. */
export function archivePath(sessionId: string, file: string): string {
  const format = file.endsWith('.tar') ? 'tar' : 'tar.gz';
  return `/v1/sessions/${encodeURIComponent(sessionId)}/workspace?format=${format}`;
}

async function saveTo(client: ApiClient, path: string, file: string): Promise<number> {
  const res = await client.getBody(path);
  if (!res.body) throw new CliError(`GET ${path} answered without a body`);
  const part = `${file}.part`;
  let bytes = 0;
  const counted = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>).on('data', (c: Buffer) => (bytes += c.length));
  try {
    await pipeline(counted, createWriteStream(part));
    await rename(part, file);
  } catch (err) {
    await rm(part, { force: true });
    throw new CliError(`downloading ${path} into ${file} failed: ${(err as Error).message}`, { cause: err });
  }
  return bytes;
}

/** Downloads what was asked for; one stderr line per file. */
export async function downloadResults(client: ApiClient, sessionId: string, t: DownloadTargets): Promise<void> {
  if (t.out) {
    const bytes = await saveTo(client, archivePath(sessionId, t.out), t.out);
    process.stderr.write(`workspace  ${t.out} (${bytes} bytes)\n`);
  }
  if (t.patch) {
    const bytes = await saveTo(client, `/v1/sessions/${encodeURIComponent(sessionId)}/changes?format=patch`, t.patch);
    process.stderr.write(`patch      ${t.patch} (${bytes} bytes${bytes === 0 ? ': nothing changed' : ''})\n`);
  }
}
