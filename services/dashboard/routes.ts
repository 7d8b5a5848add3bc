import { readFileSync, readdirSync } from 'node:fs';
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { html } from 'hono/html';
import { z } from 'zod';

// The operator dashboard (API.md `GET /dashboard`): one server-rendered page
// shell and its static assets, read once at start-up. The page holds no data:
// it signs in with an API key in the browser and reads everything through the
// REST API and its event streams, so the same roles apply. The API mounts
// these routes (at /dashboard) and documents them with its own.

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };
const PUBLIC = new URL('./public/', import.meta.url);

// Same-origin scripts, styles and requests only; nothing inline, no framing.
const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
};

function loadAssets(): Map<string, { body: string; type: string }> {
  const out = new Map<string, { body: string; type: string }>();
  for (const name of readdirSync(PUBLIC)) {
    const ext = name.slice(name.lastIndexOf('.'));
    if (TYPES[ext]) out.set(name, { body: readFileSync(new URL(name, PUBLIC), 'utf8'), type: TYPES[ext]! });
  }
  return out;
}

function page() {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ThinkFlow dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/assets/style.css">
<script type="module" src="/dashboard/assets/app.js"></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <p class="brand">ThinkFlow</p>
  <nav aria-label="Main" id="nav" hidden>
    <a href="#/approvals" data-nav="approvals">Approvals <span id="pending-count" class="count" hidden></span><span class="sr-only"> (pending count)</span></a>
    <a href="#/decided" data-nav="decided" hidden>Decided</a>
    <a href="#/jobs" data-nav="jobs">Jobs</a>
  </nav>
  <p id="who" class="who" hidden></p>
  <div id="alerts" class="alerts" role="group" aria-label="Alerts for new requests" hidden></div>
  <p id="conn" class="conn" role="status" aria-live="polite"></p>
</header>
<div id="outage" class="outage" role="alert"></div>
<main id="main" tabindex="-1">
  <section id="signin" aria-labelledby="signin-h">
    <h1 id="signin-h">Sign in</h1>
    <form id="signin-form">
      <label for="key">API key</label>
      <input id="key" name="key" type="password" autocomplete="off" required spellcheck="false">
      <p class="hint">The key stays in this browser tab only (session storage) and is sent as an Authorization header, never in a URL.</p>
      <button type="submit">Sign in</button>
      <p id="signin-error" class="error" role="alert"></p>
    </form>
  </section>
  <div id="view"></div>
</main>
<div id="toast" class="toast" role="status" aria-live="polite"></div>
</body>
</html>`;
}

const NO_KEY = { security: [] };
const clientError = { '4XX': { description: 'a client error (another method, or no such asset: 404)' } };

const routes = {
  page: createRoute({
    method: 'get', path: '/', operationId: 'getDashboard', ...NO_KEY,
    summary: 'The operator dashboard (a web page; it signs in with an API key itself)',
    responses: { 200: { description: 'the page shell', content: { 'text/html': { schema: z.string() } } }, ...clientError },
  }),
  asset: createRoute({
    method: 'get', path: '/assets/{name}', operationId: 'getDashboardAsset', ...NO_KEY,
    summary: "One of the dashboard page's scripts, its style sheet or an image",
    request: { params: z.object({ name: z.string() }) },
    responses: {
      200: { description: 'the asset', content: Object.fromEntries(Object.values(TYPES).map((t) => [t, { schema: z.string() }])) },
      ...clientError,
    },
  }),
};

/**
 * What the page knows of each tf-* tool, by name: the API builds it from the
 * tool descriptors (protocol/tools.ts), which this folder may not import, and
 * the page reads it as the generated module `assets/tools.js`.
 */
export type ToolCatalog = Record<string, {
  verb: string; judged: 'paths' | 'script'; body: 'none' | 'content' | 'edit';
  paths: Array<{ name: string; access?: 'read' | 'write' }>;
}>;

export function dashboardRoutes(tools: ToolCatalog): OpenAPIHono {
  const app = new OpenAPIHono();
  const assets = loadAssets();
  assets.set('tools.js', { body: `// Generated from the tool descriptors (services/protocol/tools.ts).\nexport const TOOLS = ${JSON.stringify(tools)};\n`, type: TYPES['.js']! });
  app.openapi(routes.page, (c) => c.html(page(), 200, SECURITY_HEADERS));
  app.openapi(routes.asset, (c) => {
    const { name } = c.req.valid('param');
    const a = assets.get(name);
    if (!a) return c.json({ error: { code: 'not_found', message: `no dashboard asset ${name}`, details: null } }, 404);
    return c.body(a.body, 200, { 'content-type': a.type, 'cache-control': 'no-cache', ...SECURITY_HEADERS });
  });
  return app;
}
