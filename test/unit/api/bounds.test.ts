// Issue 18, bounded work per request: the defaults of the new limits and the
// turn parser's command cap (the options the HTTP server gets from them are
// in test/unit/main/http-guard.test.ts).
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../services/config/index.ts';
import { parseTurnBody, PipelineError } from '../../../services/pipeline/index.ts';
import { TurnCaps } from '../../../services/api/stream-caps.ts';

describe('bounds: defaults', () => {
  it('has a default for every new limit', () => {
    const c = loadConfig({});
    expect(c.maxCommandsPerTurn).toBe(1000);
    expect(c.caps.maxTurnsPerKey).toBe(8);
    expect(c.http).toEqual({ headersTimeoutMs: 10_000, requestTimeoutMs: 120_000, keepAliveTimeoutMs: 5_000, maxConnectionsPerAddress: 128 });
  });

  it('refuses a limit that is not a positive whole number, naming it', () => {
    for (const name of ['THINKFLOW_MAX_COMMANDS_PER_TURN', 'THINKFLOW_MAX_TURNS_PER_KEY', 'THINKFLOW_HEADERS_TIMEOUT_MS', 'THINKFLOW_MAX_CONNECTIONS_PER_ADDRESS']) {
      expect(() => loadConfig({ [name]: '0' }), name).toThrow(name);
    }
  });
});

describe('bounds: commands per turn', () => {
  const tags = (n: number) => Array.from({ length: n }, (_, i) => `<tf-bash id="${i}" cmd="true" />`).join('\n');

  it('keeps up to the cap; a parse error counts as a (failed) command', () => {
    const out = parseTurnBody(`${tags(2)}<tf-bash id="x" cmd="true" />`, 3);
    expect(out.map((o) => o.type)).toEqual(['command', 'command', 'error']);
    expect(() => parseTurnBody(`${tags(3)}<tf-bash id="x" cmd="true" />`, 3)).toThrow(expect.objectContaining({ code: 'too_many_commands' }));
    const broken = Array.from({ length: 20_000 }, () => '<tf-bash id="x" cmd="true" />').join('');
    expect(() => parseTurnBody(broken, 1000)).toThrow(expect.objectContaining({ code: 'too_many_commands' }));
  });

  it('20,000 tags: too_many_commands as soon as the cap is passed, in well under a second', () => {
    const body = tags(20_000);
    const t0 = performance.now();
    let err: unknown;
    try { parseTurnBody(body, 1000); } catch (e) { err = e; }
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(err).toBeInstanceOf(PipelineError);
    expect(err).toMatchObject({ code: 'too_many_commands', details: { limit: 1000 } });
  });

  it('slices never split a surrogate pair (a body full of emoji parses as one piece)', () => {
    const content = '😀'.repeat(100_000);
    const out = parseTurnBody(`<tf-write id="1" path="e.txt">${content}</tf-write>`, 10);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ type: 'command', command: { content } });
  });
});

describe('bounds: turns per key', () => {
  it('a key past its cap gets 429 too_many naming THINKFLOW_MAX_TURNS_PER_KEY; others are unaffected; release frees', () => {
    const caps = new TurnCaps(2);
    const r1 = caps.acquire('a');
    caps.acquire('a');
    expect(() => caps.acquire('a')).toThrow(expect.objectContaining({ status: 429, code: 'too_many', details: { cap: 'THINKFLOW_MAX_TURNS_PER_KEY', limit: 2 } }));
    expect(() => caps.acquire('b')).not.toThrow();
    r1();
    r1();
    expect(caps.openFor('a')).toBe(1);
    expect(() => caps.acquire('a')).not.toThrow();
  });
});
