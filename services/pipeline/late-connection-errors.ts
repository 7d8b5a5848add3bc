import type { EventEmitter } from 'node:events';
import type { Worker } from 'bullmq';

// BullMQ 5.81 closes a Worker whose blocking connection is still connecting
// by disconnecting it and removing every listener at once; the connection's
// pending start then fails ("Connection is closed.") and is emitted as an
// 'error' nobody listens to any more, which Node turns into an uncaught
// exception: the whole process exits. It happened in `bench:soak` (200
// sessions, Workers of idle sessions closed while Redis was busy). Here an
// 'error' emitted on a Worker's connections with no listener left is logged
// instead of thrown; an error with a listener goes to it as before.

type Emitter = Pick<EventEmitter, 'emit' | 'listenerCount'>;

/** The connections a Worker owns (its own `connection` is ours, shared; its blocking one is its own). */
export function workerConnections(worker: Worker): Emitter[] {
  const inner = worker as unknown as { blockingConnection?: Emitter; connection?: Emitter };
  return [inner.blockingConnection, inner.connection].filter((c): c is Emitter => c !== undefined);
}

export function guardLateConnectionErrors(connections: Emitter[], log: (err: unknown) => void): void {
  for (const conn of connections) {
    const emit = conn.emit.bind(conn);
    conn.emit = (event: string | symbol, ...args: unknown[]): boolean => {
      if (event === 'error' && conn.listenerCount('error') === 0) {
        log(args[0]);
        return false;
      }
      return emit(event, ...args);
    };
  }
}
