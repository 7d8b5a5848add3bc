import type { Duplex } from 'node:stream';
import { SentinelConnector } from 'ioredis';
// Not re-exported by ioredis's index; the package has no exports map, so its built path is reachable.
import standaloneModule from 'ioredis/built/connectors/StandaloneConnector.js';

// Every Redis connection writes the commands of one event-loop turn in one
// socket write: the socket is corked at the turn's first write and uncorked
// at setImmediate (the loop's check phase, right after the I/O callbacks that
// issued them). This is what ioredis's auto-pipelining was for, without its
// costs: it built a Pipeline object per batch and held a new batch back until
// the previous one was answered (head-of-line), which added 10–30 µs to
// every sequential round trip and took about twice the CPU under load
// (bench:redis-write-batch; bench/RESULTS.md, "eighth pass"). Commands leave
// in call order either way.

type ConnectResult = Promise<Duplex>;
type ConnectorLike = { connect(onEvent: unknown): ConnectResult };
type ConnectorClass = new (options: unknown) => ConnectorLike;
// Node hands a CommonJS module's exports object as the default import, the test runner its `default` export.
const exported = standaloneModule as unknown as ConnectorClass | { default: ConnectorClass };
const StandaloneConnector: ConnectorClass = typeof exported === 'function' ? exported : exported.default;

/** Corks `stream` at the first write of a loop turn and uncorks it once the turn's I/O callbacks have run. */
export function batchWrites(stream: Duplex): Duplex {
  let corked = false;
  const flush = () => {
    corked = false;
    stream.uncork();
  };
  const write = stream.write;
  stream.write = function batchedWrite(this: Duplex, ...args: Parameters<Duplex['write']>): boolean {
    if (!corked) {
      corked = true;
      stream.cork();
      setImmediate(flush);
    }
    return write.apply(this, args);
  } as Duplex['write'];
  return stream;
}

/** ioredis's connector for one server (also each node of a Cluster), its streams batched. */
export class BatchingConnector extends StandaloneConnector {
  override connect(onEvent: unknown): ConnectResult {
    return super.connect(onEvent).then(batchWrites);
  }
}

/** ioredis's Sentinel connector, its streams batched (the master's and each replica's). */
export class BatchingSentinelConnector extends SentinelConnector {
  override connect(onEvent: Parameters<SentinelConnector['connect']>[0]): ReturnType<SentinelConnector['connect']> {
    return super.connect(onEvent).then((s) => batchWrites(s as Duplex) as typeof s);
  }
}
