// A small process that starts the host tools (losetup, mkfs.ext4, debugfs,
// cp) for the service (host-tools.ts). A fork of the service itself held its
// event loop for about 7 ms per tool on the bench machine (every session
// start attaches a loop device, every spare image is a copy), during which no
// command of any session moved; a fork of this one holds only this one.
// Plain JavaScript, started with no loader, so it needs nothing of the service.
//
// One request per line on stdin: {id, file, args, timeoutMs, maxBuffer};
// one answer per line on stdout: {id, stdout, stderr, error: null | {message, code, signal, killed}}.
// It ends when its stdin closes (the service went away).
import { execFile } from 'node:child_process';
import { createInterface } from 'node:readline';

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    process.stderr.write(`host-tool-runner: a request that is not JSON (${line.length} bytes) was ignored\n`);
    return;
  }
  const answer = (err, stdout, stderr) => {
    const error = err ? { message: err.message, code: err.code ?? null, signal: err.signal ?? null, killed: Boolean(err.killed) } : null;
    process.stdout.write(`${JSON.stringify({ id: req.id, stdout, stderr, error })}\n`);
  };
  try {
    execFile(req.file, req.args, { timeout: req.timeoutMs, killSignal: 'SIGKILL', encoding: 'utf8', maxBuffer: req.maxBuffer }, answer);
  } catch (err) {
    // Thrown, not called back (an argument with a NUL byte, ENOMEM, E2BIG): this call fails, not every call in flight.
    answer(err, '', '');
  }
});
lines.on('close', () => process.exit(0));
