import type { Readable } from 'node:stream';

// A preview's diffs, per changed file, from the copy's git patch
// (workspace-out.ts `patch`, git-patch.mjs's format): the patch is read up
// to a bound, cut into its `diff --git` sections, and each text section is
// kept up to a bound of its own. Binary sections ("GIT binary patch") and
// sections past the read bound have no diff: the change list still names them.

export type FileDiff = { diff: string; truncated: boolean };

/** Up to `maxBytes` of a stream (then destroyed); `cut` when there was more. */
export async function readBounded(stream: Readable, maxBytes: number): Promise<{ text: string; cut: boolean }> {
  const parts: Buffer[] = [];
  let size = 0;
  let cut = false;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      parts.push(chunk);
      size += chunk.length;
      if (size > maxBytes) {
        cut = true;
        break;
      }
    }
  } finally {
    stream.destroy();
  }
  return { text: Buffer.concat(parts, size).subarray(0, maxBytes).toString('utf8'), cut };
}

const SPECIAL = /[\x00-\x1f"\\\x7f-\xff]/;
const ESCAPES: Record<number, string> = { 7: 'a', 8: 'b', 9: 't', 10: 'n', 11: 'v', 12: 'f', 13: 'r', 34: '"', 92: '\\' };

/** `prefix + path` as git (and git-patch.mjs) writes it in a header: C-quoted, byte by byte, when it holds anything special. */
export function gitQuoted(prefix: string, path: string): string {
  const raw = Buffer.from(prefix + path, 'utf8');
  const latin = raw.toString('latin1');
  if (!SPECIAL.test(latin)) return latin;
  let out = '"';
  for (const c of raw) {
    if (ESCAPES[c]) out += `\\${ESCAPES[c]}`;
    else if (c < 0x20 || c >= 0x7f) out += `\\${c.toString(8).padStart(3, '0')}`;
    else out += String.fromCharCode(c);
  }
  return `${out}"`;
}

/**
 * The diff of each path in `paths` found whole or in part in `patch`: text
 * sections only, each cut at `fileBytes` characters. `patchCut`: the patch
 * was read only in part, so its last section is incomplete.
 */
export function fileDiffs(patch: string, paths: string[], fileBytes: number, patchCut: boolean): Map<string, FileDiff> {
  const byHeader = new Map(paths.map((p) => [`diff --git ${gitQuoted('a/', p)} ${gitQuoted('b/', p)}`, p]));
  const out = new Map<string, FileDiff>();
  const sections = patch.split(/^(?=diff --git )/m);
  sections.forEach((section, i) => {
    const header = section.slice(0, section.indexOf('\n') >>> 0);
    const path = byHeader.get(header);
    if (path === undefined || /^GIT binary patch$/m.test(section)) return;
    const incomplete = patchCut && i === sections.length - 1;
    // The header and index lines say nothing a person reads; the hunks start at `---`.
    const body = section.slice(Math.max(0, section.indexOf('\n--- ') + 1));
    if (!body.startsWith('--- ')) return; // a mode change only, or an empty file
    const truncated = incomplete || body.length > fileBytes;
    out.set(path, { diff: truncated ? body.slice(0, fileBytes) : body, truncated });
  });
  return out;
}
