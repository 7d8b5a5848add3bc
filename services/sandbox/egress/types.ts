import type net from 'node:net';
import type { Logger } from '../../log/index.ts';

/** What a client asked for: a CONNECT authority, or the absolute-form target of a plain request. */
export type EgressTarget = { host: string; port: number };

/** What the connection carried, reported once when it ends (also when it failed after it was allowed). */
export type EgressUsage = {
  /** Bytes received from the upstream (what came into the sandbox). */
  bytes_in: number;
  /** Bytes sent to the upstream (what left the sandbox). */
  bytes_out: number;
  /** From the allow decision to the end (an operator's wait is not counted). */
  duration_ms: number;
  /** The address that was dialled (absent when none was). */
  address?: string;
  /** Why it ended other than by either side closing normally. */
  error?: string;
};

export type EgressDecision =
  | { allow: true; finish?: (usage: EgressUsage) => void }
  | { allow: false; status: 403; message: string };

/** Everything `decide` may use besides the target. */
export type DecideContext = {
  /** Aborted when the client goes away (or its session is closed) before the decision: a pending approval can be withdrawn. */
  signal: AbortSignal;
};

export type AddressCheck = { allowed: true } | { allowed: false; message: string };

/** A name's addresses (IP literals). Called once per connection; an IP literal target is never resolved. */
export type Resolver = (host: string) => Promise<string[]>;

/** Opens a TCP connection to an IP address that was checked (never a name). */
export type Dialer = (address: string, port: number) => net.Socket;

export interface EgressLimits {
  /** Client connections at once per session; more are answered 429 and closed. @default 64 */
  maxConnectionsPerSession: number;
  /** Time a client has to send a whole request head (slow-loris bound). Not the time `decide` takes. @default 10000 */
  headersTimeoutMs: number;
  /** A tunnel or a forwarded request with no byte either way for this long is closed. @default 60000 */
  idleTimeoutMs: number;
  /** Resolution plus TCP connect of the upstream, after the allow decision. @default 10000 */
  connectTimeoutMs: number;
}

export const DEFAULT_EGRESS_LIMITS: Readonly<EgressLimits> = Object.freeze({
  maxConnectionsPerSession: 64,
  headersTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  connectTimeoutMs: 10_000,
});

export interface EgressProxyDeps {
  /** The policy and approvals for one connection; may wait for an operator. A throw refuses the connection (500). */
  decide(sessionId: string, target: EgressTarget, ctx: DecideContext): Promise<EgressDecision>;
  /** The special-address rule (loopback, private, link-local, metadata unless a global rule names it), per address that would be dialled. */
  checkAddress(sessionId: string, address: string, port: number): AddressCheck;
  /** @default dns.promises.lookup(host, { all: true, verbatim: true }) */
  resolve?: Resolver;
  /** @default net.connect({ host: address, port }) */
  dial?: Dialer;
  limits?: Partial<EgressLimits>;
  /**
   * Mode of each session's socket file. The in-container relay connects with
   * the command user's ids (sandbox-image/executor/egress-relay.mjs); what keeps
   * others out is the 0700 root above the session directories (egress-dirs.ts)
   * and, in the container, the root-only /var/lib/thinkflow. @default 0o666
   */
  socketMode?: number;
  /** @default the service logger, component `egress` */
  log?: Logger;
}

/** Fills the defaults and refuses a limit that is not a positive integer (a zero would silently mean "none"). */
export function resolveEgressLimits(limits: Partial<EgressLimits> = {}): EgressLimits {
  const out = { ...DEFAULT_EGRESS_LIMITS, ...limits };
  for (const [name, value] of Object.entries(out)) {
    if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`egress limit ${name} must be a positive integer, got ${value}`);
  }
  return out;
}
