#!/usr/bin/env bash
# The offline compose stack (docker-compose.yml): npm run compose:up / compose:down.
#
#   scripts/compose.sh build   builds thinkflow/redis:local and thinkflow/service:local
#                              (and the sandbox image) from the debootstrap base, no registry
#   scripts/compose.sh up      build, start Redis, the API and two workers, wait until the API is ready
#   scripts/compose.sh down    stop the stack and remove the sessions' sandbox containers
#                              (DATA=1: also Redis's data and the sessions' workspaces)
#
# Settings (environment): THINKFLOW_COMPOSE_PROJECT (thinkflow), THINKFLOW_COMPOSE_PORT (8080),
# THINKFLOW_API_KEYS (made once into .tmp/compose.env when unset), THINKFLOW_SANDBOX_PREFIX
# (tfc-, the workers' sandbox names, so `down` removes only the stack's own).
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '[compose] %s\n' "$*" >&2; }

export THINKFLOW_COMPOSE_PROJECT="${THINKFLOW_COMPOSE_PROJECT:-thinkflow}"
export THINKFLOW_COMPOSE_PORT="${THINKFLOW_COMPOSE_PORT:-8080}"
export THINKFLOW_SANDBOX_PREFIX="${THINKFLOW_SANDBOX_PREFIX:-tfc-}"
BASE_IMAGE="${THINKFLOW_SANDBOX_BASE:-thinkflow/debian-base:bookworm}"
ENV_FILE=.tmp/compose.env

command -v docker-compose >/dev/null || { log "docker-compose is not installed (apt-get install docker-compose)"; exit 1; }
compose() { docker-compose -p "$THINKFLOW_COMPOSE_PROJECT" -f docker-compose.yml "$@"; }

# Skips a build whose inputs hash is the image's label already.
build_image() { # image dockerfile context hash
  local current
  current="$(docker image inspect -f '{{ index .Config.Labels "thinkflow.inputs-hash" }}' "$1" 2>/dev/null || true)"
  if [ "$current" = "$4" ]; then log "$1 is up to date ($4)"; return; fi
  log "building $1"
  docker build -q --build-arg "BASE=$BASE_IMAGE" --build-arg "INPUTS_HASH=$4" -t "$1" -f "$2" "$3" >/dev/null
}

# The app as it runs: sources, policies, the CLI bundle, production dependencies; Node the machine's own.
stage_app() {
  local stage="$1" node
  node="$(command -v node)"
  [ "$(node -p 'process.versions.node.split(".")[0] >= 20')" = true ] || { log "Node.js 20 or newer is needed (found $(node -v))"; exit 1; }
  [ -d node_modules ] || { log "run npm ci first (node_modules is missing)"; exit 1; }
  mkdir -p "$stage/app"
  cp "$node" "$stage/node"
  cp -a bin services policies sandbox-image package.json package-lock.json "$stage/app/"
  [ -d dist ] && cp -a dist "$stage/app/"
  cp -a node_modules "$stage/app/"
  (cd "$stage/app" && npm prune --omit=dev --ignore-scripts --no-audit --no-fund --offline >/dev/null 2>&1) \
    || (cd "$stage/app" && npm prune --omit=dev --ignore-scripts --no-audit --no-fund >/dev/null)
}

build() {
  bash sandbox-image/build.sh
  build_image thinkflow/redis:local deploy/redis.Dockerfile deploy \
    "$(cat deploy/redis.Dockerfile | sha256sum | cut -c1-16)"
  local stage hash
  stage="$(mktemp -d /tmp/thinkflow-compose.XXXXXX)"
  # Expanded now and cleared when it runs: a RETURN trap would otherwise fire again on later returns.
  trap "rm -rf '$stage'; trap - RETURN" RETURN
  stage_app "$stage"
  hash="$( { cat deploy/service.Dockerfile; (cd "$stage" && find . -type f -not -path './app/node_modules/*' | LC_ALL=C sort | xargs sha256sum);
    sha256sum "$stage/app/package-lock.json"; } | sha256sum | cut -c1-16)"
  build_image thinkflow/service:local deploy/service.Dockerfile "$stage" "$hash"
}

# An admin key for the stack (submits jobs and approves), made once and kept in .tmp/compose.env (0600), unless one is set.
keys() {
  if [ -n "${THINKFLOW_API_KEYS:-}" ]; then return; fi
  mkdir -p .tmp
  if [ ! -f "$ENV_FILE" ]; then
    (umask 077; printf 'THINKFLOW_API_KEYS=%s:admin\n' "tfk_$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$ENV_FILE")
    log "made an admin key in $ENV_FILE"
  fi
  set -a; . "$ENV_FILE"; set +a
}

wait_ready() {
  local url="http://127.0.0.1:${THINKFLOW_COMPOSE_PORT}/readyz"
  for _ in $(seq 1 120); do
    if curl -fsS -m 2 "$url" >/dev/null 2>&1; then log "ready: $url"; return; fi
    sleep 1
  done
  compose ps >&2; compose logs --tail 40 >&2
  log "the API did not become ready at $url within 120 s"; exit 1
}

up() {
  build
  keys
  # The workers' host paths: dockerd binds them into sandboxes by the same path.
  install -d -m 0700 /var/lib/thinkflow /var/lib/thinkflow/egress /var/lib/thinkflow/workspaces
  compose up -d
  wait_ready
  log "API: http://127.0.0.1:${THINKFLOW_COMPOSE_PORT} (key: THINKFLOW_API_KEYS in ${ENV_FILE}, or yours)"
}

down() {
  keys
  compose down --timeout 60 $( [ "${DATA:-0}" = 1 ] && echo --volumes )
  # The sessions' sandboxes are the workers' (not the stack's services), found by their name prefix.
  # Their workspaces stay (a session's next command reopens its own) unless DATA=1.
  local ids dir=/var/lib/thinkflow/workspaces
  ids="$(docker ps -aq --filter label=thinkflow.managed=true --filter "name=^${THINKFLOW_SANDBOX_PREFIX}")"
  [ -z "$ids" ] || docker rm -f $ids >/dev/null
  if [ "${DATA:-0}" = 1 ]; then
    ids="$(docker volume ls -q --filter label=thinkflow.managed=true | grep "^${THINKFLOW_SANDBOX_PREFIX}" || true)"
    [ -z "$ids" ] || docker volume rm -f $ids >/dev/null
    # A file attached in a worker's mount namespace may show from here as /workspaces/NAME: matched by its name.
    losetup -nO NAME,BACK-FILE -l 2>/dev/null \
      | awk -v p="$THINKFLOW_SANDBOX_PREFIX" '{ n = split($2, a, "/") } $2 ~ /workspaces\// && index(a[n], p) == 1 {print $1}' \
      | xargs -r -n1 losetup -d
    rm -f "$dir/$THINKFLOW_SANDBOX_PREFIX"*
    rm -rf /var/lib/thinkflow/egress/"$THINKFLOW_SANDBOX_PREFIX"*
    log "stopped; Redis data, sandboxes and workspaces removed"
  else
    log "stopped (Redis data and workspaces kept; DATA=1 removes them)"
  fi
}

case "${1:-}" in
  build) build ;;
  up) up ;;
  down) down ;;
  *) echo "usage: scripts/compose.sh build|up|down" >&2; exit 2 ;;
esac
