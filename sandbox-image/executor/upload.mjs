// Workspace uploads, the executor's part (services/sandbox/README.md,
// "Workspace uploads"). The host streams the archive into a separate
// extraction program (upload-extract.mjs, run with `docker exec` as the
// command user); the executor only orders that with the session's commands
// and commits the result:
//   uploadBegin {wait_ms, ttl_ms}    -> {staging, allowance} once the session's
//                                       execution slot is free; {busy: true} after wait_ms
//   uploadTouch {staging}            -> {held}; the lease ends ttl_ms after the last touch
//   uploadEnd {staging, commit, symlinks?} -> {committed} | {failed: {code, message, entry?}}
// While the lease is held no command starts (they queue behind it), and
// when it ends every process of the command user (the extractor) is ended and
// the staging directory removed, whatever happened.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { dropBaseline } from './baseline-store.mjs';
import { toFailure } from './errors.mjs';
import { asRoot } from './identity.mjs';
import { WORKSPACE } from './paths.mjs';
import { killStrays } from './strays.mjs';
import { ArchiveError } from './tar-reader.mjs';
import { commitUpload } from './upload-commit.mjs';

export const STAGING_PREFIX = '.thinkflow-upload-';

/** Staging directories a crashed upload left (a container that stopped mid-way). */
export function removeStaleStaging() {
  for (const name of readdirSync(WORKSPACE)) {
    if (name.startsWith(STAGING_PREFIX)) rmSync(path.join(WORKSPACE, name), { recursive: true, force: true });
  }
}

function failureOf(err) {
  if (err instanceof ArchiveError) return { code: err.code, message: err.message, ...(err.entry !== undefined ? { entry: err.entry } : {}) };
  const f = toFailure(err);
  return { code: f.error_code, message: f.error };
}

/**
 * @param ctx.serial the executor's one execution slot (main.mjs)
 * @param ctx.quota FilesystemQuota (kernel) or WorkspaceQuota (watched: the allowance is counted here)
 */
export function uploadOps({ serial, quota }) {
  let lease = null; // { staging, release, timer }

  function end(l) {
    clearTimeout(l.timer);
    if (lease === l) lease = null;
    l.release();
  }

  async function finish(l, work) {
    try {
      // The extractor (or anything else of the command user) must not outlive the lease.
      await killStrays();
      return await work();
    } finally {
      rmSync(path.join(WORKSPACE, l.staging), { recursive: true, force: true });
      end(l);
    }
  }

  function expire(l) {
    process.stderr.write(`executor: upload ${l.staging} was not touched for its ttl; discarded\n`);
    finish(l, async () => {}).catch((err) => process.stderr.write(`executor: discarding an upload failed: ${err.message}\n`));
  }

  function begin(req, limits, send) {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      send({ rid: req.rid, result: { busy: true } });
    }, req.wait_ms ?? 2000);
    serial(async () => {
      if (settled) return; // the host was told busy: this turn of the slot is not taken
      clearTimeout(timer);
      settled = true;
      let granted;
      try {
        removeStaleStaging();
        const staging = `${STAGING_PREFIX}${randomBytes(8).toString('hex')}`;
        mkdirSync(path.join(WORKSPACE, staging), 0o700);
        const allowance = quota.kernel ? 'none' : Math.max(0, limits.workspaceQuotaBytes - quota.measure());
        granted = new Promise((release) => {
          const l = { staging, release };
          l.timer = setTimeout(() => expire(l), req.ttl_ms ?? 30_000);
          lease = l;
        });
        send({ rid: req.rid, result: { staging, allowance } });
      } catch (err) {
        return send({ rid: req.rid, error: String((err && err.message) || err) });
      }
      await granted;
    });
  }

  function touch(req, _limits, send) {
    const held = lease !== null && lease.staging === req.staging;
    if (held) lease.timer.refresh();
    send({ rid: req.rid, result: { held } });
  }

  async function finishRequest(req, _limits, send) {
    const l = lease;
    if (!l || l.staging !== req.staging) return send({ rid: req.rid, result: { failed: { code: 'upload_expired', message: 'the upload lease had ended (not touched in time)' } } });
    clearTimeout(l.timer);
    try {
      await finish(l, async () => {
        if (!req.commit) return;
        await commitUpload(l.staging, req.symlinks);
        asRoot(dropBaseline); // the store is root's; taken again before the next command (baseline-store.mjs)
      });
      send({ rid: req.rid, result: { committed: req.commit === true } });
    } catch (err) {
      send({ rid: req.rid, result: { failed: failureOf(err) } });
    }
  }

  return {
    active: () => lease !== null,
    uploadBegin: begin,
    uploadTouch: touch,
    uploadEnd: finishRequest,
  };
}
