// The in-container executor runs without services/, so it keeps its own copy
// of the default limits (used only for a request that carries none). The host
// sends its own on every request; these checks make a drift between the two
// copies fail here instead of showing up as a different cap in one code path.
import { describe, expect, it } from 'vitest';
import { ENV_DEFAULTS, loadConfig } from '../../../services/config/index.ts';
import { DEFAULT_OUTPUT_CAP_BYTES, resolveSandboxOptions } from '../../../services/sandbox/index.ts';
import { DEFAULT_LIMITS } from '../../../sandbox-image/executor/limits.mjs';

describe('the executor\'s fallback limits', () => {
  it('equal the host\'s sandbox defaults, limit for limit', () => {
    const o = resolveSandboxOptions({});
    expect(DEFAULT_LIMITS).toStrictEqual({
      bashTimeoutMs: o.bashTimeoutMs,
      outputCapBytes: o.outputCapBytes,
      readCapBytes: o.readCapBytes,
      readPathCapBytes: o.readPathCapBytes,
      workspaceQuotaBytes: o.workspaceQuotaBytes,
      egressRelayMaxConnections: o.egressRelayMaxConnections,
    });
  });

  it('use the output cap the pipeline records with and the quota of the config', () => {
    expect(DEFAULT_LIMITS.outputCapBytes).toBe(DEFAULT_OUTPUT_CAP_BYTES);
    expect(DEFAULT_LIMITS.workspaceQuotaBytes).toBe(loadConfig({}).workspaceQuotaMb * 1024 ** 2);
    expect(DEFAULT_LIMITS.workspaceQuotaBytes).toBe(ENV_DEFAULTS.THINKFLOW_WORKSPACE_QUOTA_MB * 1024 ** 2);
  });
});
