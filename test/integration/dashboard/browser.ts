// Browser-test helpers: Debian's Chromium driven by playwright-core, a TCP
// proxy between the browser and the API (so a test can drop every connection
// as a failing server would), and axe-core run inside the page.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, expect } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

const require = createRequire(import.meta.url);

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
  '--no-first-run', '--disable-component-update', '--disable-sync',
];

/** Uncaught errors and CSP refusals of every page opened by signedIn(): tests expect none. */
export const pageErrors: string[] = [];

/**
 * After each test a script error in the page fails the test that caused it;
 * after the file the browser, the proxy and the service close, in that order.
 */
export function checkPagesAndClose(parts: () => Array<{ close(): Promise<unknown> } | undefined>): void {
  afterEach(() => {
    expect(pageErrors.splice(0)).toEqual([]);
  });
  afterAll(async () => {
    for (const part of parts()) await part?.close();
  }, 120_000);
}

/** Playwright gives every launch a fresh temporary user-data-dir, removed on close. */
export async function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/**
 * One person at one browser: a fresh context (own storage), signed in with `key`.
 * `opts`: browser permissions (e.g. notifications) and a script run in the page before its own.
 */
export async function signedIn(browser: Browser, base: string, key: string, viewport = { width: 1280, height: 800 },
  opts: { permissions?: string[]; init?: () => void } = {}): Promise<{ context: BrowserContext; page: Page }> {
  // The page's Content-Security-Policy stays on: whatever the app needs must pass it.
  const context = await browser.newContext({ viewport, permissions: opts.permissions ?? [] });
  if (opts.init) await context.addInitScript(opts.init);
  const page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(`[${key.slice(0, 6)}] ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) pageErrors.push(`[${key.slice(0, 6)}] ${m.text()}`); });
  await page.goto(`${base}/dashboard`);
  await page.fill('#key', key);
  await page.click('#signin-form button[type=submit]');
  await page.waitForSelector('#who:not([hidden])');
  return { context, page };
}

/**
 * axe-core's violations on the page as it is now, at every impact (minor and
 * moderate too: issue 24 asks for none at all); `min` raises the floor.
 */
export async function axeViolations(page: Page, min: 'minor' | 'moderate' | 'serious' | 'critical' = 'minor'): Promise<{ id: string; impact: string; help: string; nodes: string[] }[]> {
  const IMPACTS = ['minor', 'moderate', 'serious', 'critical'];
  // Judged on the page at rest: axe read a toast 0.2 s into its fade-in (contrast 1.17, foreground against the
  // background showing through) and failed CI once. Finite transitions and animations end well within 2 s; were
  // one still running then, axe runs anyway and reports what it sees.
  await page.waitForFunction(() => document.getAnimations().every((a) => a.playState !== 'running' || a.effect?.getTiming().iterations === Infinity), undefined, { timeout: 2000 })
    .catch((err: unknown) => console.warn(`axeViolations: animations still running after 2 s (${String(err)}); checking anyway`));
  // Evaluated through the devtools protocol, which the page's CSP does not govern (a <script> tag would be refused).
  await page.evaluate(readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'));
  const result = await page.evaluate(async () => (globalThis as any).axe.run(document, { resultTypes: ['violations'] }));
  return (result.violations as any[])
    .filter((v) => IMPACTS.indexOf(v.impact) >= IMPACTS.indexOf(min))
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n: any) => `${n.target.join(' ')}${n.failureSummary && v.id === 'color-contrast' ? ` (${String(n.any?.[0]?.message ?? '').slice(0, 120)})` : ''}`) }));
}

/**
 * A TCP proxy to `target`; `dropAll()` cuts every open connection at once;
 * `hold(true)` refuses new ones (an outage that lasts) until `hold(false)`.
 */
export async function startProxy(target: string): Promise<{ url: string; dropAll(): number; hold(on: boolean): void; close(): Promise<void> }> {
  const t = new URL(target);
  const sockets = new Set<Socket>();
  let held = false;
  const server: Server = createServer((client) => {
    if (held) { client.destroy(); return; }
    const upstream = connect(Number(t.port), t.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => { client.destroy(); upstream.destroy(); });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    dropAll() {
      const n = sockets.size;
      for (const s of sockets) s.destroy();
      return n;
    },
    hold(on) { held = on; },
    close: () => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}
