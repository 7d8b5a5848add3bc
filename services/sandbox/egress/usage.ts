import type net from 'node:net';
import type { Logger } from '../../log/index.ts';
import type { EgressUsage } from './types.ts';

/**
 * The usage of one allowed connection, reported exactly once: the ledger
 * records every allowed connection, so one that failed after the decision
 * (a refused address, a dial error, a client gone) still reports.
 */
export class UsageMeter {
  private readonly started = performance.now();
  private upstream?: net.Socket;
  private address?: string;
  private error?: string;
  private done = false;

  constructor(
    private readonly report: ((usage: EgressUsage) => void) | undefined,
    private readonly log: Logger,
  ) {}

  /** The address chosen and the socket dialled to it (its counters are the bytes). */
  dialled(address: string, upstream: net.Socket): void {
    this.address = address;
    this.upstream = upstream;
  }

  /** Keeps the first reason: later errors are consequences of it (a destroyed peer, a reset). */
  fail(error: string): void {
    this.error ??= error;
  }

  get ended(): boolean {
    return this.done;
  }

  end(error?: string): void {
    if (this.done) return;
    this.done = true;
    if (error) this.fail(error);
    const usage: EgressUsage = {
      bytes_in: this.upstream?.bytesRead ?? 0,
      bytes_out: this.upstream?.bytesWritten ?? 0,
      duration_ms: Math.round(performance.now() - this.started),
      ...(this.address === undefined ? {} : { address: this.address }),
      ...(this.error === undefined ? {} : { error: this.error }),
    };
    this.log.debug({ usage }, 'egress connection ended');
    try {
      this.report?.(usage);
    } catch (err) {
      this.log.error({ err, usage }, 'egress usage report failed');
    }
  }
}
