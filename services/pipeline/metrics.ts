// A minimal Prometheus registry (text format 0.0.4): counters, gauges and
// histograms with labels. Hand-rolled because the service needs a dozen series,
// not a dependency. Values are per process, as Prometheus expects.

type Labels = Record<string, string>;
const key = (l: Labels) => JSON.stringify(Object.entries(l).sort(([a], [b]) => a.localeCompare(b)));
const fmt = (l: Labels) => {
  const e = Object.entries(l);
  return e.length ? `{${e.map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`).join(',')}}` : '';
};

abstract class Metric {
  constructor(readonly name: string, readonly help: string, readonly type: 'counter' | 'gauge' | 'histogram') {}
  abstract lines(): string[];
  render(): string {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`, ...this.lines()].join('\n');
  }
}

export class Counter extends Metric {
  readonly #v = new Map<string, { labels: Labels; value: number }>();
  constructor(name: string, help: string) { super(name, help, 'counter'); }
  inc(labels: Labels = {}, by = 1): void {
    const k = key(labels);
    const e = this.#v.get(k);
    if (e) e.value += by; else this.#v.set(k, { labels, value: by });
  }
  lines(): string[] { return [...this.#v.values()].map((e) => `${this.name}${fmt(e.labels)} ${e.value}`); }
}

export class Gauge extends Metric {
  readonly #v = new Map<string, { labels: Labels; value: number }>();
  #collect?: () => Promise<void> | void;
  constructor(name: string, help: string, collect?: () => Promise<void> | void) { super(name, help, 'gauge'); this.#collect = collect; }
  set(value: number, labels: Labels = {}): void { this.#v.set(key(labels), { labels, value }); }
  async collect(): Promise<void> { await this.#collect?.(); }
  lines(): string[] { return [...this.#v.values()].map((e) => `${this.name}${fmt(e.labels)} ${e.value}`); }
}

export class Histogram extends Metric {
  readonly #buckets: number[];
  readonly #v = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
  constructor(name: string, help: string, buckets: number[]) { super(name, help, 'histogram'); this.#buckets = buckets; }
  observe(value: number, labels: Labels = {}): void {
    const k = key(labels);
    let e = this.#v.get(k);
    if (!e) this.#v.set(k, (e = { labels, counts: this.#buckets.map(() => 0), sum: 0, count: 0 }));
    this.#buckets.forEach((b, i) => { if (value <= b) e!.counts[i]! += 1; });
    e.sum += value;
    e.count += 1;
  }
  lines(): string[] {
    const out: string[] = [];
    for (const e of this.#v.values()) {
      this.#buckets.forEach((b, i) => out.push(`${this.name}_bucket${fmt({ ...e.labels, le: String(b) })} ${e.counts[i]}`));
      out.push(`${this.name}_bucket${fmt({ ...e.labels, le: '+Inf' })} ${e.count}`);
      out.push(`${this.name}_sum${fmt(e.labels)} ${e.sum}`, `${this.name}_count${fmt(e.labels)} ${e.count}`);
    }
    return out;
  }
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** The series of one process. */
export class PipelineMetrics {
  readonly commandsEnqueued = new Counter('thinkflow_commands_enqueued_total', 'Commands written to the ledger, by initial status');
  readonly commandsFinished = new Counter('thinkflow_commands_finished_total', 'Commands that reached a final status in this process, by status and tool');
  readonly queueWait = new Histogram('thinkflow_command_queue_wait_seconds', 'Enqueue to start of execution', LATENCY_BUCKETS);
  readonly execution = new Histogram('thinkflow_command_execution_seconds', 'Execution time in the sandbox, by tool', LATENCY_BUCKETS);
  readonly approvals = new Counter('thinkflow_approvals_total', 'Approval requests and answers, by event');
  readonly httpRequests = new Counter('thinkflow_http_requests_total', 'HTTP requests, by method, route and status');
  readonly openWorkers = new Gauge('thinkflow_open_session_workers', 'BullMQ workers open in this process (one per busy session)');
  readonly extra: Gauge[] = [];

  async render(): Promise<string> {
    for (const g of [this.openWorkers, ...this.extra]) await g.collect();
    const all: Metric[] = [
      this.commandsEnqueued, this.commandsFinished, this.queueWait, this.execution, this.approvals,
      this.httpRequests, this.openWorkers, ...this.extra,
    ];
    return `${all.map((m) => m.render()).join('\n')}\n`;
  }
}
