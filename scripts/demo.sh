#!/usr/bin/env bash
# `npm run demo`: sets up what is missing on this machine, then runs the demo job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-machine.sh
exec npx tsx scripts/demo.ts
