// Issue 18, bounded work per request: the options the composition root gives
// the HTTP server from the configured limits.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../services/config/index.ts';
import { httpServerOptions } from '../../../services/main/http-guard.ts';

describe('bounds: HTTP server options', () => {
  it('gives the HTTP server its timeouts, checked often enough to hold them', () => {
    expect(httpServerOptions(loadConfig({}).http)).toEqual({
      headersTimeout: 10_000, requestTimeout: 120_000, keepAliveTimeout: 5_000, connectionsCheckingInterval: 1000,
    });
    // Node refuses a request timeout below the headers timeout.
    const small = httpServerOptions({ headersTimeoutMs: 300, requestTimeoutMs: 100, keepAliveTimeoutMs: 100, maxConnectionsPerAddress: 1 });
    expect(small).toMatchObject({ headersTimeout: 300, requestTimeout: 300, connectionsCheckingInterval: 150 });
  });
});
