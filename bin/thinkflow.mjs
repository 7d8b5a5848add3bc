#!/usr/bin/env node
// The CLI is TypeScript run through tsx, so `npx thinkflow` works right after
// `npm ci` with no build step. The offline subcommands use the bundle that
// `npm ci` builds (scripts/build-cli.mjs) when it is newer than every source
// file, because they are run in bulk and tsx start-up dominates their time.
import { readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function freshBundle() {
  try {
    return statSync(`${root}dist/offline.mjs`).mtimeMs >= newestSource(`${root}services`);
  } catch {
    return false;
  }
}

if ((args[0] === 'parse' || args[0] === 'policy') && freshBundle()) {
  const { OFFLINE_COMMANDS } = await import('../dist/offline.mjs');
  process.exitCode = await OFFLINE_COMMANDS[args[0]](args.slice(1));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  const { main } = await import('../services/main/cli.ts');
  process.exitCode = await main(args);
}
