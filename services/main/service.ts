import { serve, type ServerType } from '@hono/node-server';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp, ViewPool } from '../api/index.ts';
import { Firehose, IdempotencyStore } from '../pipeline/index.ts';
import type { Config } from '../config/index.ts';
import { log, type Logger } from '../log/index.ts';
import { HttpDrain } from './http-drain.ts';
import { guardConnections, httpServerOptions } from './http-guard.ts';
import { startJobs, type JobsRuntime } from './jobs.ts';
import { createRuntime, type Runtime, type RuntimeOverrides } from './runtime.ts';

// The composition root: starts what THINKFLOW_ROLE asks for — the HTTP API
// (`api`), the worker pool (`worker`), or both (`all`) — and wires each layer
// with the narrow parts it uses. Used by `thinkflow serve` and by the tests.

export type ServiceHandle = {
  runtime: Runtime;
  /** base URL of the API, null for a worker-only process */
  url: string | null;
  close(): Promise<void>;
};

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', 'localhost']);

export async function startService(config: Config, overrides: RuntimeOverrides = {}, logger: Logger = log()): Promise<ServiceHandle> {
  const runtime = await createRuntime(config, overrides);
  let server: ServerType | null = null;
  let jobsRuntime: JobsRuntime | null = null;
  let url: string | null = null;
  const viewPool = new ViewPool(config.approvalDiff);
  const drain = new HttpDrain();
  if (config.role !== 'worker') {
    if (!config.apiKeys) {
      logger.warn('!!! WARNING: THINKFLOW_API_KEYS is unset: DEV MODE. Every loopback caller is admin; other clients are refused. !!!');
      if (!LOOPBACK_HOSTS.has(config.host)) logger.warn(`!!! WARNING: dev mode while listening on ${config.host}: set THINKFLOW_API_KEYS before exposing this port. !!!`);
    }
    jobsRuntime = await startJobs(runtime, logger);
    const app = createApp({
      apiKeys: config.apiKeys, apiKeyNames: config.apiKeyNames, web: config.web,
      limits: { maxJsonBytes: config.maxJsonBytes, maxCommandsBytes: config.maxCommandsBytes, maxUploadBytes: config.maxUploadBytes, maxStreamsPerKey: config.caps.maxStreamsPerKey, maxTurnsPerKey: config.caps.maxTurnsPerKey },
      pipeline: runtime.pipeline, gate: runtime.gate, redis: runtime.redis, keys: runtime.keys, metrics: runtime.metrics,
      firehose: new Firehose(runtime.subscriber, runtime.keys), jobs: jobsRuntime.jobs, viewPool,
      idempotency: new IdempotencyStore(runtime.redis, runtime.keys),
      redisWatch: runtime.probe, needsDocker: config.role !== 'api',
    });
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: drain.wrap(app.fetch), port: config.port, hostname: config.host, serverOptions: httpServerOptions(config.http) }, () => resolve(s));
      guardConnections(s as Server, config.http);
    });
    const addr = server.address() as AddressInfo;
    url = `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`;
    logger.info({ url, role: config.role }, `thinkflow api listening on ${url} (role ${config.role})`);
  }
  if (runtime.pool) logger.info({ prefix: config.redisPrefix }, `thinkflow worker running (prefix ${config.redisPrefix})`);
  let closing: Promise<void> | null = null;
  return {
    runtime,
    url,
    close() {
      // No new work at once: the HTTP server stops accepting and the worker
      // pool stops taking jobs. Both drain in parallel within the grace
      // (THINKFLOW_SHUTDOWN_GRACE_S); then jobs, queues, sandboxes, Redis (runtime.close).
      closing ??= (async () => {
        const graceMs = config.shutdownGraceS * 1000;
        const workers = runtime.pool?.close();
        if (server) await drain.drain(server as Server, graceMs);
        await Promise.allSettled([workers]); // a failure is logged by runtime.close, which awaits the same close
        await viewPool.close();
        await jobsRuntime?.close();
        await runtime.close();
      })();
      return closing;
    },
  };
}
