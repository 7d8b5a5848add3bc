// Types of limits.mjs for the unit test that keeps it equal to the host's defaults.
export const DEFAULT_LIMITS: {
  bashTimeoutMs: number;
  outputCapBytes: number;
  readCapBytes: number;
  readPathCapBytes: number;
  workspaceQuotaBytes: number;
  egressRelayMaxConnections: number;
};
