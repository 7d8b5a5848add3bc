import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { log } from '../log/index.ts';

// The series of one process, on prom-client: its text format, escaping and
// histogram maths are the ones Prometheus is tested against, and it brings the
// default process metrics (CPU, memory, event-loop lag, handles). One registry
// per PipelineMetrics, not the global one, so several runtimes in one process
// (the tests) do not collide.

export { Counter, Gauge, Histogram } from 'prom-client';

const MISNAMED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export class PipelineMetrics {
  readonly registry = new Registry();
  readonly commandsEnqueued: Counter<'status'>;
  readonly commandsFinished: Counter<'status' | 'tool'>;
  readonly queueWait: Histogram;
  readonly execution: Histogram<'tool'>;
  readonly approvals: Counter<'event'>;
  readonly approvalViews: Counter<'result'>;
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly openWorkers: Gauge;

  constructor(opts: { processMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.commandsEnqueued = new Counter({ name: 'thinkflow_commands_enqueued_total', help: 'Commands written to the ledger, by initial status', labelNames: ['status'], registers });
    this.commandsFinished = new Counter({ name: 'thinkflow_commands_finished_total', help: 'Commands that reached a final status in this process, by status and tool', labelNames: ['status', 'tool'], registers });
    this.queueWait = new Histogram({ name: 'thinkflow_command_queue_wait_seconds', help: 'Enqueue to start of execution', buckets: LATENCY_BUCKETS, registers });
    this.execution = new Histogram({ name: 'thinkflow_command_execution_seconds', help: 'Execution time in the sandbox, by tool', labelNames: ['tool'], buckets: LATENCY_BUCKETS, registers });
    this.approvals = new Counter({ name: 'thinkflow_approvals_total', help: 'Approval requests and answers, by event', labelNames: ['event'], registers });
    this.approvalViews = new Counter({ name: 'thinkflow_approval_views_computed_total', help: 'Approval card views (edit diff, bash explanation) computed by this process, by result: plain, diff, too_large, failed', labelNames: ['result'], registers });
    this.httpRequests = new Counter({ name: 'thinkflow_http_requests_total', help: 'HTTP requests, by method, route and status', labelNames: ['method', 'route', 'status'], registers });
    this.openWorkers = new Gauge({ name: 'thinkflow_open_session_workers', help: 'BullMQ workers open in this process (one per busy session)', registers });
    if (opts.processMetrics ?? true) this.#processMetrics();
  }

  // prom-client's defaults, less the three gauges named `*_total` that
  // `promtool check metrics` refuses (a `_total` suffix promises a counter);
  // the default `nodejs_active_resources` gauge, by type, still counts them.
  #processMetrics(): void {
    collectDefaultMetrics({ register: this.registry });
    for (const name of MISNAMED_DEFAULTS) this.registry.removeSingleMetric(name);
  }

  /** A gauge read at scrape time (e.g. from Redis, so every process reports the same figure). */
  addCollectedGauge(name: string, help: string, read: () => Promise<number>): Gauge {
    return new Gauge({
      name, help, registers: [this.registry],
      // A failed read leaves the series out of this scrape (no made-up value) and says why.
      async collect() {
        try {
          this.set(await read());
        } catch (err) {
          this.reset();
          log().warn({ err, metric: name }, 'metric not collected');
        }
      },
    });
  }

  /** The Prometheus text exposition (format 0.0.4). */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
