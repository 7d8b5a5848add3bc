// Public surface of the egress proxy. See README.md.
export { EgressProxy } from './proxy.ts';
export { DEFAULT_EGRESS_LIMITS, resolveEgressLimits } from './types.ts';
export type {
  AddressCheck, DecideContext, Dialer, EgressDecision, EgressLimits, EgressProxyDeps, EgressTarget, EgressUsage, Resolver,
} from './types.ts';
export { defaultDialer, defaultResolver } from './upstream.ts';
export { authorityOf as egressAuthority } from './target.ts';
