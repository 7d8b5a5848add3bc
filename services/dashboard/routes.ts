import { readFileSync, readdirSync } from 'node:fs';
import { Hono } from 'hono';
import { html } from 'hono/html';
import type { AppEnv } from '../api/env.ts';

// The operator dashboard (API.md `GET /dashboard`): one server-rendered page
// shell and its static assets, read once at start-up. The page holds no data:
// it signs in with an API key in the browser and reads everything through the
// REST API and its event streams, so the same roles apply.

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
    <a href="#/jobs" data-nav="jobs">Jobs</a>
  </nav>
  <p id="who" class="who" hidden></p>
  <p id="conn" class="conn" role="status" aria-live="polite"></p>
</header>
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

export function dashboardRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const assets = loadAssets();
  app.get('/', (c) => c.html(page(), 200, SECURITY_HEADERS));
  app.get('/assets/:name', (c) => {
    const a = assets.get(c.req.param('name'));
    if (!a) return c.json({ error: { code: 'not_found', message: `no dashboard asset ${c.req.param('name')}`, details: null } }, 404);
    return c.body(a.body, 200, { 'content-type': a.type, 'cache-control': 'no-cache', ...SECURITY_HEADERS });
  });
  return app;
}
