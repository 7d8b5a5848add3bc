import { afterAll, beforeAll } from 'vitest';
import { startService, type ServiceHandle } from '../../services/main/index.ts';
import { cleanupPrefix, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from './pipeline/helpers.ts';

/**
 * One service for a test file: started before its tests on a random port with
 * its own Redis prefix and sandbox prefix (`boxes`), closed and cleaned up after them.
 */
export function suiteService(name: string, env: Record<string, string> = {}): { readonly url: string | null; readonly handle: ServiceHandle; readonly boxes: string } {
  const prefix = testPrefix(name);
  const boxes = sandboxPrefix(name);
  let handle: ServiceHandle | undefined;
  beforeAll(async () => {
    handle = await startService(testConfig(prefix, { PORT: '0', THINKFLOW_SANDBOX_PREFIX: boxes, ...env }), {});
  });
  afterAll(async () => {
    await handle?.close();
    await cleanupPrefix(prefix);
    await removeSandboxes(boxes);
  });
  return {
    boxes,
    get url() { return handle!.url; },
    get handle() { return handle!; },
  };
}

/**
 * Services a test file starts as it goes (each with its own settings); every
 * one is closed and cleaned up after the file.
 */
export function servicesForSuite(name: string): (env?: Record<string, string>) => Promise<ServiceHandle> {
  const started: { svc: ServiceHandle; prefix: string; boxes: string }[] = [];
  afterAll(async () => {
    for (const s of started) {
      await s.svc.close();
      await cleanupPrefix(s.prefix);
      await removeSandboxes(s.boxes);
    }
  });
  return async (env = {}) => {
    const prefix = testPrefix(name);
    const boxes = sandboxPrefix(name);
    const svc = await startService(testConfig(prefix, { PORT: '0', THINKFLOW_SANDBOX_PREFIX: boxes, ...env }), {});
    started.push({ svc, prefix, boxes });
    return svc;
  };
}
