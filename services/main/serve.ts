import { parseArgs } from 'node:util';
import { loadConfig } from '../config/index.ts';
import { createLogger, log, setLogger } from '../log/index.ts';
import { startService } from './service.ts';

/**
 * `thinkflow serve [--role api|worker|all] [--port N] [--host H]`: runs until
 * SIGINT/SIGTERM, then drains (no new requests or jobs; those in flight get
 * THINKFLOW_SHUTDOWN_GRACE_S) and closes in order (HTTP, workers, queues,
 * sandboxes, Redis); exits 0. A second signal exits at once (130 / 143).
 */
export async function serveMain(args: string[]): Promise<number> {
  let values: { role?: string; port?: string; host?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: { role: { type: 'string' }, port: { type: 'string' }, host: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }));
  } catch (err) {
    process.stderr.write(`thinkflow serve: ${(err as Error).message}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write('usage: thinkflow serve [--role api|worker|all] [--port N] [--host H]\n');
    return 0;
  }
  let config;
  try {
    config = loadConfig({
      ...process.env,
      ...(values.role ? { THINKFLOW_ROLE: values.role } : {}),
      ...(values.port ? { PORT: values.port } : {}),
      ...(values.host ? { HOST: values.host } : {}),
    });
  } catch (err) {
    process.stderr.write(`thinkflow serve: ${(err as Error).message}\n`);
    return 2;
  }
  setLogger(createLogger({ level: config.logLevel }));
  const service = await startService(config);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  log().info({ signal, grace_s: config.shutdownGraceS }, `thinkflow: ${signal}, draining (up to ${config.shutdownGraceS} s; a second signal exits at once)`);
  // A second signal during the drain exits at once: commands still running
  // stay `running` and are recovered as after a crash (interrupted).
  const now = (again: NodeJS.Signals) => {
    log().warn({ signal: again }, `thinkflow: ${again} while draining, exiting now`);
    process.exit(again === 'SIGINT' ? 130 : 143);
  };
  process.on('SIGINT', now);
  process.on('SIGTERM', now);
  await service.close();
  log().info('thinkflow: drained and closed, exiting');
  // A handle something left open must not keep a drained process alive.
  setTimeout(() => process.exit(0), 2000).unref();
  return 0;
}
