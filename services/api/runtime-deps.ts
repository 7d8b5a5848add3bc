import type { Redis } from 'ioredis';
import type { Config } from '../config/index.ts';
import type { Executor, Keys, Pipeline, PipelineMetrics, PipelineRedis, PolicyGate } from '../pipeline/index.ts';

/** What the API uses of a process's runtime (services/main builds it). */
export type Runtime = {
  config: Config;
  keys: Keys;
  redis: PipelineRedis;
  subscriber: Redis;
  executor: Executor;
  gate: PolicyGate;
  metrics: PipelineMetrics;
  pipeline: Pipeline;
};
