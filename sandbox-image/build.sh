#!/usr/bin/env bash
# Builds the thinkflow/sandbox image (npm run sandbox:image).
# Idempotent: skipped when the image exists with the same inputs hash
# (Dockerfile + executor sources). When no registry can be reached, the
# Debian base is bootstrapped with debootstrap from the mirror named in this
# machine's apt sources and imported with `docker import`.
set -euo pipefail
cd "$(dirname "$0")"

IMAGE="${THINKFLOW_SANDBOX_IMAGE:-thinkflow/sandbox:latest}"
BASE_IMAGE="${THINKFLOW_SANDBOX_BASE:-thinkflow/debian-base:bookworm}"
SUITE=bookworm
log() { printf '[sandbox-image] %s\n' "$*" >&2; }

# The executor ships as one ES module beside its sources: Node 18 loads ES
# modules one file at a time, and its 30 files cost every container start
# about 45 ms before the executor is ready (bench/RESULTS.md). esbuild is the
# bundler tsx already brings (a dependency); without it the sources run as
# they are. The sources stay in the image (the change list's warm-up walks them).
# THINKFLOW_SANDBOX_BUNDLE=0 builds from the sources (bench:executor-start compares the two).
# The executor and the two programs the host starts with `docker exec` (an upload's extraction, the workspace
# out); the entries and flags are part of the inputs hash (test/integration/sandbox/helpers.ts reads them here).
ESBUILD=../node_modules/.bin/esbuild
BUNDLE_ENTRIES='main.mjs upload-extract.mjs workspace-out.mjs'
BUNDLE_ARGS='--bundle --platform=node --format=esm --target=node18'
bundler() {
  local version
  if [ ! -x "$ESBUILD" ] || [ "${THINKFLOW_SANDBOX_BUNDLE:-1}" = 0 ]; then echo none; return; fi
  if ! version="$("$ESBUILD" --version 2>/dev/null)"; then
    log "$ESBUILD is there but does not run (its platform package missing? npm ci): the executor is not bundled"
    echo none; return
  fi
  echo "esbuild $version $BUNDLE_ENTRIES $BUNDLE_ARGS"
}
BUNDLER="$(bundler)"

# The executor's own runtime: the Node.js this machine runs the service with (the compose stack's service image
# takes the same binary). It starts in ~30 ms in a container, against ~130 ms for Debian's Node 18 (a shared libnode
# built without V8's start-up snapshot), and every container start, every recreation after an idle stop and every
# `docker exec` of the workspace programs waits for that start (bench:executor-start). Commands keep Debian's node
# and npm on their PATH either way. THINKFLOW_SANDBOX_NODE names another binary, or `debian` to run the executor on
# Debian's too. Taken only:
#  * from 20.11.1 (21.6.2 on 21): before those, libuv used io_uring by default, and a ring made while the executor is
#    root does its file operations with root's credentials after it switched to the command user (CVE-2024-22017;
#    the image also sets UV_USE_IO_URING=0, and the sandbox's seccomp profile refuses io_uring_setup);
#  * as the binary Node names as its own (not a version manager's shim), an ELF file needing nothing from the image
#    but glibc and libstdc++ (an official or NodeSource build; not a distribution's shared libnode).
RUNTIME_LIBS='linux-vdso.so.1 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libstdc++.so.6 libgcc_s.so.1 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1'
RUNTIME_PROBE='const [a, b, c] = process.versions.node.split(".").map(Number);
const ok = a > 21 || (a === 21 && (b > 6 || (b === 6 && c >= 2))) || (a === 20 && (b > 11 || (b === 11 && c >= 1)));
console.log(`${ok ? "OK" : "OLD"} ${process.version} ${process.execPath}`);'
# Prints "PATH VERSION" of the executor's runtime, or "debian".
runtime_node() {
  local node="${THINKFLOW_SANDBOX_NODE:-$(command -v node || true)}" verdict version binary lib
  if [ "$node" = debian ]; then echo debian; return; fi
  if [ -z "$node" ]; then log "no node on PATH: the executor runs on Debian's Node"; echo debian; return; fi
  read -r verdict version binary < <("$node" -e "$RUNTIME_PROBE" 2>/dev/null | grep -E '^(OK|OLD) v[0-9]+\.[0-9]+\.[0-9]+ /' | tail -n 1) || true
  if [ "${verdict:-}" != OK ]; then
    log "$node is not Node.js 20.11.1 or newer (${version:-no version}): the executor runs on Debian's Node"
    echo debian; return
  fi
  if [ ! -f "$binary" ] || [ "$(head -c 4 "$binary" | od -An -c | tr -d ' ')" != '177ELF' ]; then
    log "$binary is not an ELF binary: the executor runs on Debian's Node (THINKFLOW_SANDBOX_NODE names another)"
    echo debian; return
  fi
  for lib in $(ldd "$binary" 2>/dev/null | awk '{print $1}' | sed 's|.*/||'); do
    case " $RUNTIME_LIBS " in *" $lib "*) ;; *)
      log "$binary needs $lib, which the image may not have: the executor runs on Debian's Node (THINKFLOW_SANDBOX_NODE names another)"
      echo debian; return ;;
    esac
  done
  echo "$binary $version"
}
read -r RUNTIME RUNTIME_VERSION < <(runtime_node) || true
# The runtime's identity in the inputs hash: its version, size and modification time (hashing its ~100 MB would
# cost every test file half a second: they ask for this hash).
runtime_line() {
  if [ "$RUNTIME" = debian ]; then echo "runtime debian"; else echo "runtime $RUNTIME_VERSION $(stat -c '%s %Y' "$RUNTIME")"; fi
}

# Sorted file list so the hash does not depend on directory order.
inputs_hash() {
  { echo "$BUNDLER"; runtime_line; { echo Dockerfile; find executor -type f | LC_ALL=C sort; } | xargs sha256sum; } \
    | sha256sum | cut -c1-16
}
HASH="$(inputs_hash)"
# What the image built now would be labelled (the tests compare it with the image they run on).
if [ "${1:-}" = --print-hash ]; then echo "$HASH"; exit 0; fi

current="$(docker image inspect -f '{{ index .Config.Labels "thinkflow.inputs-hash" }}' "$IMAGE" 2>/dev/null || true)"
if [ "$current" = "$HASH" ] && [ "${FORCE:-0}" != 1 ]; then
  log "$IMAGE is up to date ($HASH)"
  exit 0
fi

# Prints "uri suite components" for every deb source of this machine, from
# deb822 files (Types/URIs/Suites/Components) and the one-line format.
apt_sources() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '
      function flush() { if (types ~ /(^| )deb( |$)/) { n = split(uris, u, " "); m = split(suites, s, " ");
          for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) print u[i], s[j], comps }
        types = uris = suites = comps = "" }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      /^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
      /^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0 }
      /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
      /^Components:/ { sub(/^Components:[ \t]*/, ""); comps = $0 }
      END { flush() }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -E -n 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+([^[:space:]]+)[[:space:]]*(.*)$/\2 \3 \4/p' "$f"
  done
}

bootstrap_base() {
  command -v debootstrap >/dev/null || { log "debootstrap is not installed (apt-get install debootstrap)"; exit 1; }
  local sources mirror rootfs
  sources="$(apt_sources | awk -v s="$SUITE" '$2 ~ "^" s {print}')"
  mirror="$(printf '%s\n' "$sources" | awk -v s="$SUITE" '$2 == s {print $1; exit}')"
  [ -n "$mirror" ] || { log "no '$SUITE' deb source in /etc/apt/sources.list*; cannot bootstrap"; exit 1; }
  rootfs="$(mktemp -d /tmp/thinkflow-rootfs.XXXXXX)"
  trap 'rm -rf "$rootfs"' EXIT
  log "debootstrap $SUITE (minbase) from $mirror"
  debootstrap --variant=minbase "$SUITE" "$rootfs" "$mirror" >/tmp/thinkflow-debootstrap.log 2>&1 \
    || { log "debootstrap failed; see /tmp/thinkflow-debootstrap.log"; exit 1; }
  # Same sources inside the image as on this machine (updates and security included).
  printf '%s\n' "$sources" | awk '{c = $3; for (i = 4; i <= NF; i++) c = c " " $i; print "deb", $1, $2, c}' \
    >"$rootfs/etc/apt/sources.list"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  log "importing $BASE_IMAGE"
  tar -C "$rootfs" -c . | docker import -c 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
  rm -rf "$rootfs"; trap - EXIT
}

if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  if timeout 60 docker pull -q debian:bookworm-slim >/dev/null 2>&1; then
    docker tag debian:bookworm-slim "$BASE_IMAGE"
  else
    log "cannot pull debian:bookworm-slim; bootstrapping the base instead"
    bootstrap_base
  fi
fi

# The build context: the Dockerfile and the executor, its entry point bundled when a bundler is there.
context="$(mktemp -d /tmp/thinkflow-sandbox-context.XXXXXX)"
trap 'rm -rf "$context"' EXIT
cp Dockerfile "$context/" && cp -r executor "$context/executor"
mkdir "$context/runtime"
if [ "$RUNTIME" = debian ]; then ln -s /usr/bin/node "$context/runtime/node"; else cp "$RUNTIME" "$context/runtime/node"; fi
if [ "$BUNDLER" != none ]; then
  # shellcheck disable=SC2086 # the lists are words
  (cd executor && "../$ESBUILD" $BUNDLE_ENTRIES $BUNDLE_ARGS --log-level=warning --outdir="$context/executor" \
    --out-extension:.js=.mjs --allow-overwrite)
else
  log "executor not bundled (no esbuild in node_modules, or THINKFLOW_SANDBOX_BUNDLE=0): it runs from its sources"
fi
# Readable by the command user whatever the builder's umask (it runs upload-extract.mjs with `docker exec`).
chmod -R u=rwX,go=rX "$context/executor"
[ -L "$context/runtime/node" ] || chmod 0755 "$context/runtime/node"

log "building $IMAGE ($HASH)"
# Built under a tag of its own and tagged $IMAGE only once its runtime starts: a failed build leaves the image
# that was there. The legacy builder works without buildx; its deprecation banner is noise, so
# stderr is shown only when the build fails.
candidate="thinkflow/sandbox-candidate:$HASH-$$"
buildlog="$(mktemp)"
if ! DOCKER_BUILDKIT=0 docker build --build-arg BASE="$BASE_IMAGE" --build-arg INPUTS_HASH="$HASH" \
    -t "$candidate" "$context" >"$buildlog" 2>&1; then
  cat "$buildlog" >&2; rm -f "$buildlog"; log "build failed"; exit 1
fi
rm -f "$buildlog"; rm -rf "$context"; trap - EXIT
# The runtime must start in the image (a binary built against a newer glibc would not): said now, not at a session's start.
if ! out="$(docker run --rm --network none --entrypoint /opt/thinkflow/runtime/node "$candidate" -p 'process.version' 2>&1)"; then
  docker rmi "$candidate" >/dev/null 2>&1 || true
  log "the executor's runtime ($RUNTIME) does not start in the image: $out"
  log "build with THINKFLOW_SANDBOX_NODE=debian (Debian's Node) or name a Node.js 20.11.1+ binary that does; $IMAGE is unchanged"
  exit 1
fi
docker tag "$candidate" "$IMAGE" && docker rmi "$candidate" >/dev/null
log "built $IMAGE (the executor on Node.js $out)"
