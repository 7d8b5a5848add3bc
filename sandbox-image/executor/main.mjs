// ThinkFlow in-container executor. Started once per container (under tini),
// it speaks JSON lines over the container's attached stdin/stdout and over
// its control socket (control-channel.mjs), each answer on the request's channel:
//   -> {"rid":"a1","op":"exec","command":{...},"limits":{...}}
//   <- {"rid":"a1","result":{...}}
// Other ops: ping, readPath, resolve {"paths"}, cancel {"target": rid}, cancelAll,
// and uploadBegin/uploadTouch/uploadEnd (workspace uploads, upload.mjs).
// changes and baselineSettled (the workspace's baseline, workspace-ops.mjs).
// `exec` may carry `expect: {path?, dest?}` (resolutions the host's policy
// check saw): when they no longer hold it fails with `path_changed`. Responses carry the
// request's rid, so several managers or overlapping requests stay matched.
// Runs on the build machine's Node.js 20 (sandbox-image/build.sh): plain ESM JavaScript, no dependencies.
// Started as root; identity.mjs explains why commands cannot reach it.
// It also relays commands' proxy connections to the session's egress proxy (egress-relay.mjs).
import { setFlagsFromString } from 'node:v8';
import { runBash } from './bash-tool.mjs';
import { toFailure } from './errors.mjs';
import * as files from './file-tools.mjs';
import { startEgressRelay } from './egress-relay.mjs';
import { lineSplitter, lineWriter, listenControlSocket } from './control-channel.mjs';
import { dropToCommandUser } from './identity.mjs';
import { DEFAULT_LIMITS } from './limits.mjs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { resolveInside, ToolError, WORKSPACE } from './paths.mjs';
import { FilesystemQuota } from './fs-quota.mjs';
import { WorkspaceQuota } from './quota.mjs';
import { readPath } from './read-path.mjs';
import { killStrays } from './strays.mjs';
import { removeStaleStaging, uploadOps } from './upload.mjs';
import { baselineMissing, preloadBaseline, workspaceOp } from './workspace-ops.mjs';
import { warmUpChanges } from './changes.mjs';
import { fileURLToPath } from 'node:url';

dropToCommandUser();
// The host sets the cap in the container's environment (the relay outlives any one request's limits).
const relay = startEgressRelay({ maxConnections: Number(process.env.THINKFLOW_EGRESS_RELAY_MAX) || DEFAULT_LIMITS.egressRelayMaxConnections });

// The host says whether the workspace is a filesystem of its own (the kernel enforces the quota) or a plain volume (watched here).
const quota = process.env.THINKFLOW_WORKSPACE_FS === 'loop' ? new FilesystemQuota(WORKSPACE) : new WorkspaceQuota(WORKSPACE);

/** A counting semaphore: at most `n` calls of run() at once, the rest wait in order. */
function slots(n) {
  let free = n;
  const waiting = [];
  return {
    async run(fn) {
      if (free > 0) free--;
      else await new Promise((resolve) => waiting.push(resolve));
      try {
        return await fn();
      } finally {
        const next = waiting.shift();
        if (next) next();
        else free++;
      }
    },
  };
}
const viewSlots = slots(2);
const running = new Map(); // rid -> AbortController, for cancel
const startedAt = Date.now();
// Whether the control socket listens: a ping says so, and the host dials it only then (executor-socket.ts).
let controlListening = false;
// Which executor this is: the host compares it across channels (control-channel.mjs).
const instance = randomBytes(12).toString('hex');
let lastActivity = Date.now();
let inflight = 0;
let stdinEnded = false;

const sendStdout = lineWriter(process.stdout);

async function execCommand(command, limits, signal, expect) {
  const tool = command && command.tool;
  const base = { tool, path: command && command.path };
  try {
    const moved = expect ? await resolutionChanged(command, expect) : null;
    if (moved) return { ...base, ok: false, error_code: 'path_changed', error: moved.message, resolved: moved.resolved };
    if (tool === 'bash') {
      try {
        return { ...base, ...(await runBash(command, limits, signal, quota)) };
      } finally {
        relay.dropAll(); // the command's processes are gone: so are its connections
      }
    }
    const fn = Object.hasOwn(files.TOOLS, tool) ? files.TOOLS[tool] : undefined;
    if (!fn) return { ...base, ok: false, error_code: 'bad_request', error: `unknown tool ${JSON.stringify(tool)}` };
    return { ...base, ok: true, ...(await fn(command, limits, quota)) };
  } catch (err) {
    return { ...base, ok: false, ...toFailure(err) };
  }
}

// Commands run one at a time in arrival order, whoever sends them, so two
// overlapping requests cannot interleave their side effects.
let chain = Promise.resolve();
function serial(fn) {
  const run = chain.then(() => {
    lastActivity = Date.now();
    return fn();
  });
  chain = run.catch(() => {});
  return run;
}

/** Workspace-relative real path of `p` ('.' for the root); `null` when it leads outside. */
async function resolveRelative(p) {
  try {
    return path.relative(WORKSPACE, await resolveInside(p)) || '.';
  } catch (err) {
    if (err instanceof ToolError && err.code === 'path_outside_workspace') return null;
    throw err;
  }
}

// The host checked its policy against these resolutions; the side effect
// happens only if they still hold, inside the same serial slot. Otherwise the
// answer carries what they are now, for the host to judge.
async function resolutionChanged(command, expect) {
  const resolved = {};
  const moved = [];
  for (const field of ['path', 'dest']) {
    if (!(field in expect) || command[field] === undefined) continue;
    resolved[field] = await resolveRelative(command[field]);
    if (resolved[field] !== expect[field]) {
      const now = resolved[field] === null ? 'outside the workspace' : JSON.stringify(resolved[field]);
      moved.push(`${field} ${JSON.stringify(command[field])} resolves to ${now}, not ${JSON.stringify(expect[field])}`);
    }
  }
  return moved.length ? { message: moved.join('; '), resolved } : null;
}

// The baseline is taken before a workspace's first command (and the first after an
// upload, which drops it); asked here, in the command's serial slot, so every
// worker process sees the container's truth and no host caches it.
function needsBaseline(req) {
  if (!req.baseline) return false;
  try {
    return baselineMissing();
  } catch (err) {
    process.stderr.write(`executor: the baseline could not be checked (${err.message}); the command runs without it\n`);
    return false;
  }
}

function cancelledBeforeStart(command) {
  return { tool: command && command.tool, path: command && command.path, ok: false, error_code: 'aborted', error: 'cancelled before it started' };
}

const uploads = uploadOps({ serial, quota });

async function handle(req, send) {
  const rid = req.rid;
  const limits = { ...DEFAULT_LIMITS, ...(req.limits || {}) };
  switch (req.op) {
    case 'ping':
      // A command still running counts as activity now: the reaper must not take it for idle.
      return send({ rid, result: { pong: true, pid: process.pid, instance, startedAt, control: controlListening, lastActivity: running.size > 0 || uploads.active() ? Date.now() : lastActivity } });
    case 'cancel':
      running.get(req.target)?.abort();
      return send({ rid, result: { cancelled: running.has(req.target) } });
    case 'cancelAll': {
      // A worker that took over from a dead one: whatever that one started is orphaned.
      const n = running.size;
      for (const ac of running.values()) ac.abort();
      return send({ rid, result: { cancelled: n } });
    }
    case 'resolve':
      // Queued like a command, so it sees the workspace exactly as the next command will.
      return send({ rid, result: { resolved: await serial(() => Promise.all((req.paths || []).map(resolveRelative))) } });
    case 'readPath':
      // Read-only, so it does not queue behind a long command (the dashboard's
      // view); a few at a time, so parallel large reads cannot exhaust memory.
      lastActivity = Date.now();
      return send({ rid, result: await viewSlots.run(() => readPath(req.path, limits)) });
    case 'exec': {
      const ac = new AbortController();
      running.set(rid, ac);
      try {
        const result = await serial(() => {
          if (ac.signal.aborted) return cancelledBeforeStart(req.command);
          if (needsBaseline(req)) return { tool: req.command && req.command.tool, ok: false, error_code: 'baseline_missing', error: 'the workspace has no baseline yet; take it, then ask again' };
          return execCommand(req.command, limits, ac.signal, req.expect);
        });
        send({ rid, result });
        setTimeout(preloadBaseline, 0); // once per executor (a no-op after): the first change list finds the manifest read
        return;
      } finally {
        running.delete(rid);
        lastActivity = Date.now();
      }
    }
    case 'uploadBegin':
    case 'uploadTouch':
    case 'uploadEnd':
      lastActivity = Date.now();
      return uploads[req.op](req, limits, send);
    case 'changes':
      lastActivity = Date.now();
      return send({ rid, result: workspaceOp(req.op) });
    default:
      return send({ rid, error: `unknown op ${JSON.stringify(req.op)}` });
  }
}

function onLine(line, send) {
  if (line.trim() === '') return;
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    process.stderr.write(`executor: bad request line (${line.length} bytes)\n`);
    return;
  }
  inflight++;
  handle(req, send)
    .catch((err) => send({ rid: req.rid, error: String((err && err.stack) || err) }))
    .finally(() => {
      if (--inflight === 0 && stdinEnded) process.exit(0);
    });
}

process.stdin.on('data', lineSplitter((line) => onLine(line, sendStdout)));
// stdin stays open across manager restarts (OpenStdin, StdinOnce=false);
// EOF means the container is being torn down: finish what is running first.
process.stdin.on('end', () => {
  stdinEnded = true;
  if (inflight === 0) process.exit(0);
});
process.stdout.on('error', () => process.exit(0));
// A restarted executor (new container start) finds no command of its own
// running: anything of the command user left from before is an orphan.
// So is an upload's staging directory (upload.mjs): it never became part of the workspace.
// The relay and the control socket listen before `ready`, so a first command finds them.
Promise.all([killStrays(), relay.listening, listenControlSocket(onLine)]).then(
  ([, , server]) => {
    if (server) {
      controlListening = true;
      server.on('error', () => (controlListening = false));
      server.on('close', () => (controlListening = false));
    }
    try {
      removeStaleStaging();
    } catch (err) {
      process.stderr.write(`executor: a stale upload staging directory could not be removed: ${err && err.message}\n`);
    }
    sendStdout({ rid: null, type: 'ready', pid: process.pid });
    // From now on every function compiles to baseline machine code at once (Sparkplug) instead of being interpreted
    // first: a session's executor runs few commands, too few for V8 to tier its hot paths up on its own. Set after
    // `ready`, so the start itself compiles nothing more.
    setFlagsFromString('--always-sparkplug');
    // After ready, when nothing else is asked yet (a warm sandbox waits seconds for its session).
    setTimeout(() => {
      try {
        warmUpChanges(path.dirname(fileURLToPath(import.meta.url)));
      } catch (err) {
        process.stderr.write(`executor: warming up the change list failed: ${err && err.message}\n`);
      }
    }, 50);
  },
  (err) => {
    process.stderr.write(`executor: cannot clear leftover processes: ${err && err.message}\n`);
    process.exit(1);
  },
);
