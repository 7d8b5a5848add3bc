import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Sandboxes, WorkspaceOut } from '../../../services/pipeline/sandboxes.ts';
import { UploadError, type ChangeList, type ReadPathResult, type UploadResult } from '../../../services/sandbox/index.ts';
import { FakeSandboxes } from './fake-sandboxes.ts';

// The worker side of the sandbox-call tests (sandbox-calls.test.ts): the
// in-memory sandboxes plus a workspace out and uploads whose sizes, speed and
// failures the tests choose, and that record what reached them. Real Docker
// behind the same calls: test/integration/api/api-without-docker.test.ts.

export class CallSandboxes extends FakeSandboxes implements Sandboxes {
  /** bytes the archive stream produced so far, and whether it was destroyed */
  produced = 0;
  sourceDestroyed = false;
  archiveBytes = 4 * 1024 * 1024;
  /** the archive stops producing after this many bytes (a stalled sandbox) */
  stallAfter = Infinity;
  /** every upload as it arrived: sha256 and size, or the error its body ended with */
  uploads: { sha256?: string; bytes?: number; error?: string }[] = [];
  /** refuse an upload after its first chunk */
  refuseUploads = false;
  /** readPath `big` answers this; `hang` never answers */
  bigFile = Buffer.alloc(0);
  changeCount = 10;

  override async readPath(sid: string, path: string): Promise<ReadPathResult> {
    if (path === 'hang') return new Promise(() => {});
    if (path === 'big') return { kind: 'file', bytes: this.bigFile };
    if (path === 'dir') return { kind: 'dir', entries: [{ name: 'a', type: 'file', size: 1 }] };
    return super.readPath(sid, path);
  }

  override async uploadWorkspace(_sid: string, body: Readable): Promise<UploadResult> {
    const hash = createHash('sha256');
    let bytes = 0;
    try {
      for await (const chunk of body) {
        if (this.refuseUploads) throw new UploadError('invalid_archive', 'entry ../x: outside the workspace', { entry: '../x' });
        hash.update(chunk as Buffer);
        bytes += (chunk as Buffer).length;
      }
    } catch (err) {
      this.uploads.push({ error: (err as Error).message });
      throw err;
    }
    this.uploads.push({ sha256: hash.digest('hex'), bytes });
    return { entries: [], written: [{ path: 'f', kind: 'file', size: bytes }], files: 1, bytes };
  }

  readonly workspace: WorkspaceOut = {
    archive: async () => this.#archive(),
    patch: async () => Readable.from([Buffer.from('diff --git a/x b/x\n')]),
    changes: async (): Promise<ChangeList> => ({
      baseline_at: '2026-12-02T00:00:00.000Z',
      changes: Array.from({ length: this.changeCount }, (_, i) => ({ path: `dir/file-${i}.txt`, change: 'added' as const, bytes: i })),
    }),
    setBaseline: async () => ({ baseline_at: 'now', files: 0, stored_bytes: 0, ms: 0 }),
    ensureBaseline: async () => {
      throw Object.assign(new Error('baseline program failed'), { name: 'WorkspaceExecError', code: 'baseline_failed', exitCode: 3 });
    },
  };

  /** Deterministic bytes (byte i = i mod 251), produced as the reader pulls. */
  #archive(): Readable {
    const total = this.archiveBytes;
    const self = this;
    return new Readable({
      highWaterMark: 64 * 1024,
      read() {
        if (self.produced >= self.stallAfter) return;
        const n = Math.min(64 * 1024, total - self.produced);
        if (n <= 0) return void this.push(null);
        const chunk = Buffer.alloc(n);
        for (let i = 0; i < n; i++) chunk[i] = (self.produced + i) % 251;
        self.produced += n;
        this.push(chunk);
      },
      destroy(err, cb) { self.sourceDestroyed = true; cb(err); },
    });
  }
}

export function patternSha(total: number): string {
  const hash = createHash('sha256');
  const chunk = Buffer.alloc(total);
  for (let i = 0; i < total; i++) chunk[i] = i % 251;
  return hash.update(chunk).digest('hex');
}
