import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { guardLateConnectionErrors } from '../../../services/pipeline/late-connection-errors.ts';

// BullMQ 5.81 removes every listener of a Worker's connection when it closes
// it, then may still emit the connection's failed start as 'error' (bench:soak
// lost its service to one). An 'error' with no listener throws in Node; the
// guard logs it instead, and leaves errors that have a listener alone.

describe('guardLateConnectionErrors', () => {
  it('an error emitted with no listener left throws without the guard (what ended the process)', () => {
    const conn = new EventEmitter();
    expect(() => conn.emit('error', new Error('Connection is closed.'))).toThrow('Connection is closed.');
  });

  it('with the guard it is logged, not thrown', () => {
    const conn = new EventEmitter();
    const logged: unknown[] = [];
    guardLateConnectionErrors([conn], (err) => logged.push(err));
    expect(conn.emit('error', new Error('Connection is closed.'))).toBe(false);
    expect(logged.map((e) => (e as Error).message)).toEqual(['Connection is closed.']);
  });

  it('an error with a listener still reaches it, and other events pass unchanged', () => {
    const conn = new EventEmitter();
    const logged: unknown[] = [];
    const heard: unknown[] = [];
    guardLateConnectionErrors([conn], (err) => logged.push(err));
    conn.on('error', (err) => heard.push(err));
    conn.on('ready', () => heard.push('ready'));
    conn.emit('error', new Error('x'));
    conn.emit('ready');
    expect(heard.map((e) => (e instanceof Error ? e.message : e))).toEqual(['x', 'ready']);
    expect(logged).toEqual([]);
  });
});
