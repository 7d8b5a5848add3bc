import type net from 'node:net';
import type { Logger } from '../../log/index.ts';
import type { AddressCheck, DecideContext, Dialer, EgressDecision, EgressLimits, EgressTarget, Resolver } from './types.ts';

/** What the handlers of one session's connections share: its id, the injected parts with their defaults filled, and its bookkeeping. */
export interface SessionContext {
  readonly sessionId: string;
  readonly limits: EgressLimits;
  readonly log: Logger;
  decide(sessionId: string, target: EgressTarget, ctx: DecideContext): Promise<EgressDecision>;
  checkAddress(sessionId: string, address: string, port: number): AddressCheck;
  resolve: Resolver;
  dial: Dialer;
  /** Every upstream socket, so closing the session ends them at once. */
  trackUpstream(socket: net.Socket): void;
  /** True once the session is being closed: connections ended then report `session_closed`. */
  closing(): boolean;
}
