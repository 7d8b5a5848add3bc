// Worker thread of ViewPool: summarizes a large ledger record (JSON parse,
// sha256 and the bounded diff) so none of it runs on the API's event loop.
import { parentPort } from 'node:worker_threads';
import { summarizeBase } from './bounded-diff.mjs';

parentPort.on('message', ({ id, base, command, limits, withDiff }) => {
  try {
    const full = command ? Buffer.from(command).toString('utf8') : undefined;
    const summary = summarizeBase(Buffer.from(base).toString('utf8'), limits, withDiff, full);
    parentPort.postMessage({ id, summary });
  } catch (err) {
    parentPort.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
