// The limits a request falls back to when it carries none. The host always
// sends its own (services/sandbox/sandbox-options.ts, whose defaults come from
// the config); this copy exists because the executor runs on the image's Node
// without services/, and a unit test keeps it equal to the host's defaults.
export const DEFAULT_LIMITS = {
  bashTimeoutMs: 120_000,
  outputCapBytes: 65_536,
  readCapBytes: 1_048_576,
  readPathCapBytes: 16_777_216,
  workspaceQuotaBytes: 2048 * 1024 ** 2,
  // Read from THINKFLOW_EGRESS_RELAY_MAX at start (egress-relay.mjs), not per request.
  egressRelayMaxConnections: 64,
};
