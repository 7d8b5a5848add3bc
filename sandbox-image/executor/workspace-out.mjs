// The workspace's baseline, change list and patch (API.md additions
// 2026-12-01), run by the host with `docker exec` as root in the session's
// container, one process per request (services/sandbox/workspace-out.ts):
//
//   node workspace-out.mjs baseline-set     -> stdout {baseline_at, files, stored_bytes, ms}
//   node workspace-out.mjs baseline-ensure  -> stdout {taken, ...} (takes one only when there is none)
//   node workspace-out.mjs changes          -> stdout {baseline_at, changes:[{path, change, bytes}]}
//                                              (the service asks the executor instead: workspace-ops.mjs)
//   node workspace-out.mjs patch            -> stdout the git patch, streamed
//
// A failure exits non-zero with one JSON line {code, message} on stderr.
// Root, not the command user: the baseline lives where no command reaches
// (baseline-store.mjs), a file a command made unreadable is still read
// (CAP_DAC_READ_SEARCH), and the executor's sweep of the command user's
// processes after every command does not cut a download short. Every read of
// the workspace goes through tree-walk.mjs, which never follows a link.
import { contentChunks } from './blob-io.mjs';
import { ensureBaseline, takeBaseline } from './baseline.mjs';
import { assertPrivateArea, openBaseline } from './baseline-store.mjs';
import { changedEntries, listChanges } from './changes.mjs';
import { writeSection } from './git-patch.mjs';
import { WORKSPACE } from './paths.mjs';

const EXIT = { no_baseline: 3, workspace_changed: 4, baseline_unsupported: 5, baseline_failed: 6 };

/** stdout with backpressure; strings are latin1 (paths and patch text carry raw bytes). */
const sink = {
  write(data) {
    const buf = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
    if (process.stdout.write(buf)) return Promise.resolve();
    return new Promise((resolve) => process.stdout.once('drain', resolve));
  },
};

const kindOf = (mode) => (mode === '120000' ? 'link' : 'file');

async function writePatch() {
  const base = openBaseline();
  try {
    for (const c of changedEntries(WORKSPACE, base)) {
      const from = c.old ? { mode: c.old[0], oid: c.old[5], size: c.old[1], chunks: () => base.read(c.old[5]) } : null;
      const to = c.entry ? { mode: c.mode, oid: c.oid, size: c.size, chunks: () => contentChunks(c.entry) } : null;
      if (from && to && kindOf(from.mode) !== kindOf(to.mode)) {
        await writeSection(sink, c.path, from, null);
        await writeSection(sink, c.path, null, to);
      } else {
        await writeSection(sink, c.path, from, to);
      }
    }
  } finally {
    base.close();
  }
}

async function changes() {
  const base = openBaseline();
  try {
    return { baseline_at: base.baselineAt, changes: listChanges(WORKSPACE, base) };
  } finally {
    base.close();
  }
}

async function main(op) {
  assertPrivateArea();
  switch (op) {
    case 'baseline-set': return takeBaseline(WORKSPACE);
    case 'baseline-ensure': return ensureBaseline(WORKSPACE);
    case 'changes': return changes();
    case 'patch': return writePatch().then(() => undefined);
    default: throw Object.assign(new Error(`unknown operation ${JSON.stringify(op)}`), { code: 'bad_request' });
  }
}

main(process.argv[2]).then(
  (result) => {
    if (result !== undefined) process.stdout.write(`${JSON.stringify(result)}\n`);
  },
  (err) => {
    const code = typeof err.code === 'string' ? err.code : 'error';
    process.stderr.write(`${JSON.stringify({ code, message: String(err.message ?? err) })}\n`);
    process.exitCode = EXIT[code] ?? 1;
  },
);
