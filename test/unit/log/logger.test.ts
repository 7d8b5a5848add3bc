import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, withIds } from '../../../services/log/index.ts';
import { loadConfig } from '../../../services/config/index.ts';

function capture(level: 'info' | 'warn' = 'info') {
  const out = new PassThrough();
  const lines: Record<string, unknown>[] = [];
  out.on('data', (d: Buffer) => { for (const l of d.toString().split('\n')) if (l) lines.push(JSON.parse(l)); });
  return { logger: createLogger({ level, destination: out, pretty: false }), lines };
}

describe('log', () => {
  it('a line about work carries its ids, leaves out absent ones, and keeps the error', async () => {
    const { logger, lines } = capture();
    withIds({ job_id: 'job-1', session_id: 's-1', command_id: null }, logger).error({ err: new Error('boom') }, 'command failed');
    await new Promise((r) => setImmediate(r));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 50, job_id: 'job-1', session_id: 's-1', msg: 'command failed', err: { type: 'Error', message: 'boom' } });
    expect(lines[0]).not.toHaveProperty('command_id');
    expect(String(lines[0]!.time)).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('honours the level', async () => {
    const { logger, lines } = capture('warn');
    logger.info('quiet');
    logger.warn('loud');
    await new Promise((r) => setImmediate(r));
    expect(lines.map((l) => l.msg)).toEqual(['loud']);
  });

  it('THINKFLOW_LOG_LEVEL is a setting of the config, default info, and a bad one is refused by name', () => {
    expect(loadConfig({}).logLevel).toBe('info');
    expect(loadConfig({ THINKFLOW_LOG_LEVEL: 'debug' }).logLevel).toBe('debug');
    expect(() => loadConfig({ THINKFLOW_LOG_LEVEL: 'loud' })).toThrow(/THINKFLOW_LOG_LEVEL/);
  });
});
