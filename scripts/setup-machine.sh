#!/usr/bin/env bash
# Installs and starts what ThinkFlow needs on a fresh Debian 12 machine:
# Docker engine, Redis (with AOF), Node dependencies and the sandbox image.
# Idempotent: every step checks first, so a second run is quick.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

need_pkgs=()
command -v dockerd >/dev/null || need_pkgs+=(docker.io)
command -v redis-server >/dev/null || need_pkgs+=(redis-server)
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
# The dashboard's browser tests drive Debian's Chromium (playwright-core downloads no browser).
command -v chromium >/dev/null || need_pkgs+=(chromium)
# promtool (Debian's prometheus package) checks /metrics in the tests
command -v promtool >/dev/null || need_pkgs+=(prometheus)
# Each workspace is an ext4 image on a loop device (services/sandbox/workspace-fs.ts).
command -v mkfs.ext4 >/dev/null && command -v debugfs >/dev/null || need_pkgs+=(e2fsprogs)
command -v losetup >/dev/null || need_pkgs+=(mount)
# The offline compose stack (npm run compose:up, docker-compose.yml): Debian's docker-compose.
command -v docker-compose >/dev/null || need_pkgs+=(docker-compose)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

if [ ! -e /dev/loop-control ]; then
  log "loading the loop module (per-session workspace filesystems)"
  as_root modprobe loop || log "no loop devices: workspaces fall back to the quota watchdog"
fi
as_root mkdir -p -m 0700 /var/lib/thinkflow/workspaces

if ! docker info >/dev/null 2>&1; then
  log "starting dockerd"
  as_root bash -c 'nohup dockerd >/var/log/dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { log "dockerd did not start; see /var/log/dockerd.log"; exit 1; }
fi

# Redis is bounded: at REDIS_MAXMEMORY it refuses writes (noeviction: evicting
# would silently lose ledger records) and the service answers 503 storage_full.
# 2gb holds thousands of sessions (bench/RESULTS.md, "Redis memory per session").
REDIS_MAXMEMORY="${REDIS_MAXMEMORY:-2gb}"
if ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  log "starting redis-server on 127.0.0.1:6379 with appendonly yes, maxmemory $REDIS_MAXMEMORY (noeviction)"
  mkdir -p .tmp/redis
  redis-server --bind 127.0.0.1 --port 6379 --appendonly yes --appendfsync everysec \
    --maxmemory "$REDIS_MAXMEMORY" --maxmemory-policy noeviction \
    --dir "$PWD/.tmp/redis" --daemonize yes --logfile "$PWD/.tmp/redis/redis.log"
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && break; sleep 0.5; done
fi
# A Redis that was already running (a distribution service, say) gets AOF too:
# the ledger must survive a Redis restart.
if [ "$(redis-cli -h 127.0.0.1 config get appendonly | tail -1)" != "yes" ]; then
  log "turning on appendonly in the running Redis"
  redis-cli -h 127.0.0.1 config set appendonly yes >/dev/null
fi
# ... and a memory bound, unless one is set already.
if [ "$(redis-cli -h 127.0.0.1 config get maxmemory | tail -1)" = "0" ]; then
  log "setting maxmemory $REDIS_MAXMEMORY (noeviction) in the running Redis"
  redis-cli -h 127.0.0.1 config set maxmemory "$REDIS_MAXMEMORY" >/dev/null
  redis-cli -h 127.0.0.1 config set maxmemory-policy noeviction >/dev/null
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing Node dependencies (npm ci)"
  npm ci --no-audit --no-fund
fi

if [ -f sandbox-image/build.sh ]; then
  bash sandbox-image/build.sh
fi
