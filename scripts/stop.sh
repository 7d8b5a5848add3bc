#!/usr/bin/env bash
# Stops the service the demo started in the background.
set -euo pipefail
cd "$(dirname "$0")/.."
pidfile=.tmp/serve.pid
if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  kill "$(cat "$pidfile")"
  for _ in $(seq 1 50); do kill -0 "$(cat "$pidfile")" 2>/dev/null || break; sleep 0.2; done
  echo "thinkflow service stopped"
else
  echo "no thinkflow service started by the demo is running"
fi
rm -f "$pidfile"
