import { parseArgs } from 'node:util';
import { loadConfig } from '../config/index.ts';
import { createLogger, log, setLogger } from '../log/index.ts';
import { startService } from './service.ts';

/**
 * `thinkflow serve [--role api|worker|all] [--port N] [--host H]`: runs until
 * SIGINT/SIGTERM, then closes in order (HTTP, workers, queues, sandboxes, Redis).
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
  await new Promise<void>((resolve) => {
    const stop = (sig: string) => {
      log().info({ signal: sig }, `thinkflow: ${sig}, shutting down`);
      resolve();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
  await service.close();
  return 0;
}
