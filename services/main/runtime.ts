import { hostname } from 'node:os';
import type { Config } from '../config/index.ts';
import { log } from '../log/index.ts';
import {
  Approvals, PauseMarks, createKeys, createQueueRedis, createRedis, createSubscriber, EgressGate, EgressListeners, FilePolicyGate, Pipeline, PipelineMetrics, Processor, DockerSandboxes, RedisProbe, WorkerPool,
  RemoteSandboxes, SandboxCallServer, migrateKeys, uploadChecks, warmSandboxesOf, type Sandboxes, type Keys, type PipelineRedis, type PolicyGate, type WorkerPoolOptions, type WarmSandboxes,
} from '../pipeline/index.ts';
import type { Redis } from 'ioredis';
import { EgressProxy, SandboxManager } from '../sandbox/index.ts';

// The pipeline side of one process: three Redis connections (the pipeline's
// commands and scripts, BullMQ's queues, and a subscriber shared by events,
// approvals and wake-ups) that wait through a
// Redis outage, a third that only PINGs and fails fast (the probe: is Redis
// reachable, for the API's 503s and /readyz), the sandboxes behind the
// pipeline's Sandboxes port, the pipeline, and the worker pool when this
// process runs the worker role. Plus one blocking connection per open
// session Worker, which BullMQ requires. Only a process with the worker role
// has Docker: an API-only one (THINKFLOW_ROLE=api) builds no Docker client at
// all and reaches sandboxes through calls any worker serves
// (pipeline/sandbox-calls); a worker serves them with one more blocking
// connection. `all` calls its own sandboxes in-process (no Redis hop).

/** One process's parts (the API takes the narrow ones it uses: see service.ts), the worker pool and the shutdown. */
export type Runtime = {
  config: Config;
  keys: Keys;
  redis: PipelineRedis;
  subscriber: Redis;
  /** Redis reachability within about a second, on a connection of its own (the API's 503s, /readyz) */
  probe: RedisProbe;
  sandboxes: Sandboxes;
  gate: PolicyGate;
  metrics: PipelineMetrics;
  pipeline: Pipeline;
  pool: WorkerPool | null;
  /** what this worker's egress proxies ask before each connection (null in an API-only process) */
  egress: EgressGate | null;
  /** the workers' side of sandbox calls (null in an API-only process) */
  calls: SandboxCallServer | null;
  close(): Promise<void>;
};

export type RuntimeOverrides = {
  sandboxes?: Sandboxes; gate?: PolicyGate; worker?: boolean;
  /** sandboxes through workers' calls even when not role=api (tests of the remote path in one process); wins over `sandboxes` */
  remote?: boolean;
  /** tests shorten the recovery timings */
  poolOptions?: Partial<WorkerPoolOptions>;
};

/** @example const rt = await createRuntime(loadConfig()); ...; await rt.close(); */
export async function createRuntime(config: Config, overrides: RuntimeOverrides = {}): Promise<Runtime> {
  const keys = createKeys(config.redisPrefix);
  const gate = overrides.gate ?? (await FilePolicyGate.load(config.policyDir));
  const redis = createRedis(config.redisUrl, `thinkflow-${config.role}@${config.redisPrefix}`);
  const subscriber = createSubscriber(config.redisUrl, `thinkflow-${config.role}-sub@${config.redisPrefix}`);
  const queueRedis = createQueueRedis(config.redisUrl, `thinkflow-${config.role}-queues@${config.redisPrefix}`);
  // Data of the key layout before this code's is renamed first, before any worker or request reads it.
  await migrateKeys(redis, keys).catch((err: unknown) => {
    redis.disconnect();
    subscriber.disconnect();
    queueRedis.disconnect();
    throw err;
  });
  const probe = new RedisProbe(config.redisUrl, `thinkflow-${config.role}-probe@${config.redisPrefix}`, [redis, subscriber, queueRedis]);
  const remote = overrides.remote ?? (config.role === 'api' && !overrides.sandboxes);
  const manager = overrides.sandboxes || remote ? null : new SandboxManager({
    namePrefix: config.sandboxPrefix, image: config.sandboxImage, workspaceQuotaBytes: config.workspaceQuotaMb * 1024 * 1024,
    workspaceFs: config.workspace.fs, workspaceDir: config.workspace.dir, workspaceInodes: config.workspace.inodes, workspaceSpares: config.workspace.spares,
    egressDir: config.egressDir, egressRelayMaxConnections: config.egress.maxConnections, executorChannel: config.executorChannel, startConcurrency: config.sandboxStartConcurrency,
    idleStopMs: config.sandboxIdleStopS * 1000, reapIntervalMs: config.sandboxReapIntervalS * 1000, idlePauseMs: config.sandboxIdlePauseS * 1000, pauseWith: config.sandboxPauseWith,
    onPause: new PauseMarks(redis, keys).changed,
  });
  const remoteSandboxes = remote ? new RemoteSandboxes({ redis, keys, subscriber }, config.sandboxCalls) : null;
  await remoteSandboxes?.start();
  const sandboxes: Sandboxes = remoteSandboxes ?? overrides.sandboxes ?? new DockerSandboxes(manager!, config.preview);
  const metrics = new PipelineMetrics();
  // Read from Redis at scrape time, so every API process reports the same figure.
  metrics.addCollectedGauge('thinkflow_approvals_pending', 'Approvals waiting for an operator (all processes)', () =>
    redis.zcount(keys.approvalsPending(), Date.now(), '+inf'));
  if (manager) metrics.addCollectedGauge('thinkflow_sandboxes_paused', 'Session containers this process holds paused (idle or waiting for an approval)', () => Promise.resolve(manager.pausedCount));
  const pipeline = new Pipeline({
    redis, subscriber, queueRedis, keys, sandboxes, gate, metrics, bodyBytes: config.recordBodyBytes, retentionS: config.retentionS, eventsKeep: config.eventsKeep, parser: config.parser,
    maxCommandsPerTurn: config.maxCommandsPerTurn, storeBytesPerKey: config.storeBytesPerKey,
    ownerCaps: {
      maxSessions: config.caps.maxSessionsPerKey, maxRunning: config.caps.maxRunningPerKey,
      // A container stops at most one reaper period after its idle-stop time.
      liveWindowMs: (config.sandboxIdleStopS + config.sandboxReapIntervalS) * 1000,
    },
  });
  const runWorker = overrides.worker ?? config.role !== 'api';
  let pool: WorkerPool | null = null;
  let egress: EgressGate | null = null;
  let listeners: EgressListeners | null = null;
  let calls: SandboxCallServer | null = null;
  if (runWorker && !remote) {
    calls = new SandboxCallServer({
      redis, keys, subscriber, sandboxes,
      uploadOptions: async (sid) => uploadChecks(gate, await pipeline.session(sid)),
    }, config.sandboxCalls);
    await calls.start();
  }
  if (runWorker) {
    const approvals = new Approvals(redis, keys);
    approvals.attachSubscriber(subscriber);
    const side = pipeline.workerSide();
    const gateOfEgress = new EgressGate({
      sessions: side.sessions, ledger: side.ledger, gate, approvals, events: pipeline.events, log: pipeline.network,
      promptWaitS: config.egress.promptWaitS,
    });
    egress = gateOfEgress;
    // The proxy outside the sandbox (sandbox/egress): it asks the gate, resolves, checks the address and dials it itself.
    if (manager) {
      const proxy = new EgressProxy({
        decide: (sid, target, ctx) => gateOfEgress.decide(sid, target, ctx.signal),
        checkAddress: (sid, address, port) => gateOfEgress.checkAddress(sid, address, port),
        limits: { maxConnectionsPerSession: config.egress.maxConnections },
      });
      listeners = new EgressListeners(proxy, (sid) => manager.egressSocketPath(sid));
    }
    const processor = new Processor(
      { lifecycle: side.lifecycle, sessions: side.sessions, approvals, gate, sandboxes, caps: side.caps, ...(listeners ? { egress: listeners } : {}) },
      { approvalTtlS: config.approvalTtlS, workerId: `${hostname()}:${process.pid}` },
    );
    pool = new WorkerPool(
      {
        redis, keys, subscriber, queues: pipeline.queues, processor, openWorkers: metrics.openWorkers, ...warmOf(sandboxes, config, listeners),
        // The same port the processor thaws through (a process's own sandboxes; none for remote calls or fakes without it).
        ...(sandboxes.prewake && { prewake: (sid: string) => sandboxes.prewake!(sid) }),
      },
      {
        lockMs: config.lockMs, stalledIntervalMs: config.stalledIntervalMs, idleMs: config.workerIdleMs, lingerMs: config.runLingerMs,
        shutdownGraceMs: config.shutdownGraceS * 1000, ...overrides.poolOptions,
      },
    );
    await pool.start();
    const local = pool;
    pipeline.wakeRunsWith((sid, step) => local.wakeHere(sid, step));
  }
  await probe.settle(2000);
  let closing: Promise<void> | null = null;
  return {
    config, keys, redis, subscriber, probe, sandboxes, gate, metrics, pipeline, pool, egress, calls,
    // Reverse creation order; each step in its own try and with a time limit, so
    // one failure (or a Redis that is down, where quit() would wait for a
    // reconnect) does not skip or hang the rest. Connections are cut at the end.
    // The workers' step has the shutdown grace on top (running commands finish
    // or are interrupted within it: worker-pool.ts).
    close() {
      closing ??= (async () => {
        const poolLimitMs = (pool ? config.shutdownGraceS * 1000 : 0) + 20_000;
        const steps: [string, () => Promise<unknown>, number][] = [
          ['workers', async () => pool?.close(), poolLimitMs],
          ['sandbox calls', async () => calls?.close(), 10_000],
          ['egress', async () => listeners?.close(), 10_000],
          ['pipeline', () => pipeline.close(), 10_000],
          ['sandboxes', () => sandboxes.close(), 10_000],
          ['subscriber', () => subscriber.quit(), 10_000],
          ['queue connection', () => queueRedis.quit(), 10_000],
          ['redis', () => redis.quit(), 10_000],
        ];
        for (const [name, step, ms] of steps) {
          let timer: NodeJS.Timeout | undefined;
          const limit = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`timed out after ${ms / 1000} s`)), ms);
          });
          try {
            await Promise.race([step(), limit]);
          } catch (err) {
            log().error({ err, step: name }, 'closing: step failed; the next steps still run');
          } finally {
            clearTimeout(timer);
          }
        }
        probe.close();
        subscriber.disconnect();
        queueRedis.disconnect();
        redis.disconnect();
      })();
      return closing;
    },
  };
}

/**
 * The worker pool's warm sandboxes, where this process opens sandboxes itself: THINKFLOW_WARM_POOL of them, and at 0
 * none made here, but a dead worker's still removed (worker-liveness.ts calls the pool's dropDead in any survivor).
 */
function warmOf(sandboxes: Sandboxes, config: Config, listeners: EgressListeners | null): { warm?: { size: number; touchMs: number; sandboxes: WarmSandboxes } } {
  const warm = warmSandboxesOf(sandboxes);
  if (!warm) return {};
  const size = config.workspace.warmPool;
  // Touched well within every idle limit that could otherwise close, pause or stop a waiting one (0 = that limit is off).
  const limits = [config.workerIdleMs, config.sandboxIdlePauseS * 1000, config.sandboxIdleStopS * 1000].filter((ms) => ms > 0);
  const touchMs = Math.max(100, Math.min(5000, ...limits.map((ms) => ms / 2)));
  // The session's egress proxy listens before its first command as before any command: a warm one already does.
  const listen = async (sid: string) => { await listeners?.ready(sid); };
  return { warm: { size, touchMs, sandboxes: { ...warm, prewarm: async (sid) => { await warm.prewarm(sid); await listen(sid); }, touch: async (sid) => { await warm.touch(sid); await listen(sid); } } } };
}
