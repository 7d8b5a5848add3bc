import { describe, expect, it } from 'vitest';
import { loadConfig, parseApiKeyNames, parseApiKeys } from '../../../services/config/index.ts';
import { createKeys } from '../../../services/pipeline/keys.ts';
import { PipelineMetrics } from '../../../services/pipeline/metrics.ts';
import { skipReason } from '../../../services/pipeline/lifecycle/results.ts';
import { resolveSandboxOptions } from '../../../services/sandbox/index.ts';

describe('config', () => {
  it('has the defaults of API.md', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 8080, host: '127.0.0.1', redisUrl: 'redis://127.0.0.1:6379', role: 'all', apiKeys: null,
      policyDir: './policies', approvalTtlS: 900, maxJsonBytes: 2 * 1024 * 1024, maxCommandsBytes: 16 * 1024 * 1024,
      // API.md Additions: the workspace quota and the per-key caps
      workspaceQuotaMb: 2048, caps: { maxSessionsPerKey: 100, maxRunningPerKey: 20, maxStreamsPerKey: 50 },
    });
    expect(resolveSandboxOptions({})).toMatchObject({ workspaceQuotaBytes: 2048 * 1024 ** 2, maxFrameBytes: 32 * 1024 ** 2 });
  });

  it('gives a draining process 30 s by default (THINKFLOW_SHUTDOWN_GRACE_S, 0 allowed: interrupt at once)', () => {
    expect(loadConfig({}).shutdownGraceS).toBe(30);
    expect(loadConfig({ THINKFLOW_SHUTDOWN_GRACE_S: '0' }).shutdownGraceS).toBe(0);
    expect(() => loadConfig({ THINKFLOW_SHUTDOWN_GRACE_S: '-1' })).toThrow(/THINKFLOW_SHUTDOWN_GRACE_S/);
  });

  it('gives each workspace its own filesystem when the host can, in /var/lib/thinkflow/workspaces with 100,000 inodes', () => {
    expect(loadConfig({}).workspace).toEqual({ fs: 'auto', dir: '/var/lib/thinkflow/workspaces', inodes: 100_000, spares: 2, warmPool: 2 });
    expect(resolveSandboxOptions({})).toMatchObject({ workspaceFs: 'auto', workspaceDir: '/var/lib/thinkflow/workspaces', workspaceInodes: 100_000, workspaceSpares: 2 });
    expect(loadConfig({}).workspace.spares).toBe(2);
    expect(loadConfig({ THINKFLOW_WORKSPACE_SPARES: '0' }).workspace.spares).toBe(0);
    // Warm sandboxes per worker process: 2 by default, 0 turns them off, a negative or huge pool is refused.
    expect(loadConfig({ THINKFLOW_WARM_POOL: '0' }).workspace.warmPool).toBe(0);
    expect(() => loadConfig({ THINKFLOW_WARM_POOL: '-1' })).toThrow(/THINKFLOW_WARM_POOL/);
    expect(() => loadConfig({ THINKFLOW_WARM_POOL: '65' })).toThrow(/THINKFLOW_WARM_POOL/);
    expect(loadConfig({ THINKFLOW_WORKSPACE_INODES: '20000', THINKFLOW_WORKSPACE_FS: 'watchdog' }).workspace).toMatchObject({ fs: 'watchdog', inodes: 20_000 });
    expect(() => loadConfig({ THINKFLOW_WORKSPACE_FS: 'xfs' })).toThrow(/THINKFLOW_WORKSPACE_FS/);
    expect(() => loadConfig({ THINKFLOW_WORKSPACE_INODES: '10' })).toThrow(/THINKFLOW_WORKSPACE_INODES/);
  });

  it('refuses a quota or a cap that is not a positive whole number, naming the setting', () => {
    for (const [name, value] of [['THINKFLOW_WORKSPACE_QUOTA_MB', '0'], ['THINKFLOW_MAX_SESSIONS_PER_KEY', '-1'], ['THINKFLOW_MAX_RUNNING_PER_KEY', 'many'], ['THINKFLOW_MAX_STREAMS_PER_KEY', '1.5']] as [string, string][]) {
      expect(() => loadConfig({ [name]: value }), name).toThrow(name);
    }
  });
  it('parses key:role pairs and refuses a bad one without echoing the key', () => {
    expect(parseApiKeys('a:submitter, b:c:operator ,z:admin')).toEqual(new Map([['a', 'submitter'], ['b:c', 'operator'], ['z', 'admin']]));
    expect(parseApiKeys('  ')).toBeNull();
    expect(() => parseApiKeys('secret123:root')).toThrow(/\*\*\*:root/);
    expect(() => parseApiKeys('secret123:root')).not.toThrow(/secret123/);
    expect(() => loadConfig({ THINKFLOW_ROLE: 'boss' })).toThrow(/THINKFLOW_ROLE/);
  });
  it('reads an optional display name per key (key:role:name)', () => {
    const raw = 'k1:operator:alice, b:c:submitter ,k3:admin:ops.team';
    expect(parseApiKeys(raw)).toEqual(new Map([['k1', 'operator'], ['b:c', 'submitter'], ['k3', 'admin']]));
    expect(parseApiKeyNames(raw)).toEqual(new Map([['k1', 'alice'], ['k3', 'ops.team']]));
    expect(loadConfig({ THINKFLOW_API_KEYS: raw }).apiKeyNames.get('k1')).toBe('alice');
    expect(() => parseApiKeys('sekrit:operator:bad name!')).toThrow(/\*\*\*:operator:bad name!/);
    expect(() => parseApiKeys('sekrit:operator:bad name!')).not.toThrow(/sekrit/);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
  });
  it('reads the model settings; an empty variable counts as unset', () => {
    // THINKFLOW_MODEL has no default (API.md: unset).
    expect(loadConfig({}).model).toEqual({ baseUrl: null, apiKey: null, name: null, idleMs: 300_000 });
    expect(loadConfig({ THINKFLOW_MODEL_IDLE_S: '45' }).model.idleMs).toBe(45_000);
    expect(() => loadConfig({ THINKFLOW_MODEL_IDLE_S: '0' })).toThrow(/THINKFLOW_MODEL_IDLE_S/);
    expect(loadConfig({ OPENAI_BASE_URL: '', THINKFLOW_MODEL: '', PORT: '' })).toMatchObject({ port: 8080, model: { baseUrl: null, name: null } });
    expect(loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: 'k', THINKFLOW_MODEL: 'm' }).model).toEqual({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'k', name: 'm', idleMs: 300_000 });
    expect(() => loadConfig({ OPENAI_BASE_URL: 'not a url' })).toThrow(/OPENAI_BASE_URL/);
    expect(loadConfig({}).runnerTtlS).toBe(20);
  });
  it('refuses a base URL without a model name, saying so', () => {
    expect(() => loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' })).toThrow(/THINKFLOW_MODEL is unset but OPENAI_BASE_URL is set/);
    expect(() => loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', THINKFLOW_MODEL: '' })).toThrow(/THINKFLOW_MODEL/);
  });
  it('has the parser settings of PROTOCOL.md §1 and §3, the sandbox image and event retention', () => {
    expect(loadConfig({})).toMatchObject({
      parser: { legacyTags: false, maxBodyBytes: 8 * 1024 * 1024 }, sandboxImage: 'thinkflow/sandbox:latest', eventsKeep: 0,
    });
    expect(loadConfig({ THINKFLOW_LEGACY_TAGS: 'true', THINKFLOW_MAX_TAG_BODY_BYTES: '1024', THINKFLOW_SANDBOX_IMAGE: 'reg/img:1', THINKFLOW_EVENTS_KEEP: '5000' })).toMatchObject({
      parser: { legacyTags: true, maxBodyBytes: 1024 }, sandboxImage: 'reg/img:1', eventsKeep: 5000,
    });
    expect(() => loadConfig({ THINKFLOW_LEGACY_TAGS: 'maybe' })).toThrow(/THINKFLOW_LEGACY_TAGS/);
    expect(() => loadConfig({ THINKFLOW_MAX_TAG_BODY_BYTES: '0' })).toThrow(/THINKFLOW_MAX_TAG_BODY_BYTES/);
  });
  it('the sandbox reads no environment of its own: the image comes from the config', () => {
    const saved = process.env.THINKFLOW_SANDBOX_IMAGE;
    process.env.THINKFLOW_SANDBOX_IMAGE = 'from/process-env:1';
    try {
      expect(resolveSandboxOptions({}).image).toBe('thinkflow/sandbox:latest');
      expect(resolveSandboxOptions({ image: 'reg/img:1' }).image).toBe('reg/img:1');
    } finally {
      if (saved === undefined) delete process.env.THINKFLOW_SANDBOX_IMAGE;
      else process.env.THINKFLOW_SANDBOX_IMAGE = saved;
    }
  });
});

describe('keys', () => {
  it('builds every key under the prefix with the session as hash tag', () => {
    const k = createKeys('tfx');
    expect(k.record('ses_1', 3)).toBe('tfx:{ses_1}:rec:3');
    expect(k.queueName('ses_1')).toBe('{ses_1}');
    expect(k.sessionFromQueue(k.queueName('ses_1'))).toBe('ses_1');
    expect(k.bullPrefix).toBe('tfx:q');
    expect(() => k.record('a:b', 1)).toThrow(/invalid session id/);
    expect(() => k.events('{x}')).toThrow();
    expect(() => createKeys('bad prefix')).toThrow();
  });
});

describe('metrics', () => {
  it('renders Prometheus text with labels, escaping and histogram buckets', async () => {
    const m = new PipelineMetrics();
    m.httpRequests.inc({ method: 'GET', route: '/a"b', status: '200' });
    m.httpRequests.inc({ method: 'GET', route: '/a"b', status: '200' });
    m.queueWait.observe(0.004);
    m.queueWait.observe(2);
    const text = await m.render();
    expect(text).toContain('# TYPE thinkflow_http_requests_total counter');
    expect(text).toContain('thinkflow_http_requests_total{method="GET",route="/a\\"b",status="200"} 2');
    expect(text).toContain('thinkflow_command_queue_wait_seconds_bucket{le="0.005"} 1');
    expect(text).toContain('thinkflow_command_queue_wait_seconds_bucket{le="+Inf"} 2');
    expect(text).toContain('thinkflow_command_queue_wait_seconds_count 2');
    expect(text.endsWith('\n')).toBe(true);
  });
});

describe('turn skip reasons', () => {
  it('names the failed command or the parse error', () => {
    expect(skipReason({ id: '4' })).toBe('skipped: command 4 failed earlier in this turn');
    expect(skipReason({ id: 'parse error (bad_id)' })).toBe('skipped: parse error (bad_id) earlier in this turn');
  });
});
