#!/usr/bin/env bash
# A pipeline's round trip through ThinkFlow: hand a repository over, ask for
# a change that must pass a validator, take the patch back, and check that it
# applies to a clean checkout of the commit it was made from.
#
#   examples/pipeline.sh [REPO [TASK [VALIDATOR]]]
#
# Without REPO it makes a small sample repository whose test fails, and asks
# (validator `npm test`) for the fix the built-in replay model knows ("Fix the greeting …"): its
# first attempt fails the validator, the second passes, so the job succeeds
# in 2 validation rounds. With a real model (OPENAI_BASE_URL on the server)
# pass any repository, task and validator.
#
# Needs a running service (`npm run demo` leaves one on 127.0.0.1:8080, or
# set THINKFLOW_URL and THINKFLOW_API_KEY). Exits 0 only when the job
# succeeded, its validator passed, and the patch applied to a clean checkout
# (`git apply --check`, then `git apply`) where the validator passes too.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
thinkflow() { node "$here/bin/thinkflow.mjs" "$@"; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
say() { printf '[pipeline] %s\n' "$*" >&2; }

repo="${1:-}"
task="${2:-Fix the greeting in greet.sh so that test.sh passes; note the change in a CHANGELOG.md and drop TODO.md, which it resolves.}"
validator="${3:-npm test}"

if [ -z "$repo" ]; then
  repo="$work/sample"
  mkdir -p "$repo"
  printf '#!/bin/sh\necho "Helo, $1"\n' > "$repo/greet.sh"
  printf '#!/bin/sh\n# The greeting must be exactly this.\n[ "$(sh greet.sh world)" = "Hello, world!" ]\n' > "$repo/test.sh"
  printf '{ "name": "greet", "private": true, "scripts": { "test": "sh test.sh" } }\n' > "$repo/package.json"
  printf '# greet\n\nSays hello.\n' > "$repo/README.md"
  printf -- '- fix the greeting\n' > "$repo/TODO.md"
  printf '\x89PNG\r\n\x1a\n\x00\x01\x02' > "$repo/logo.png" # a binary file the patch must leave alone
  git -C "$repo" init -q -b main
  git -C "$repo" -c user.name=pipeline -c user.email=pipeline@example.invalid add -A
  git -C "$repo" -c user.name=pipeline -c user.email=pipeline@example.invalid commit -q -m 'sample: greeting with a typo'
  say "made a sample repository at $repo (its test fails: $(cd "$repo" && sh test.sh && echo passes || echo fails))"
fi
[ -d "$repo/.git" ] || { say "$repo is not a git repository"; exit 2; }
commit="$(git -C "$repo" rev-parse HEAD)"

# The clean tree of that commit, .git included, is what the job works on.
git clone -q "$repo" "$work/upload"
git -C "$work/upload" checkout -q "$commit"
say "uploading $repo at ${commit:0:12}; validator: $validator"

# --idempotency-key: a retry of this step in the same run (PIPELINE_RUN_ID) gets the same job, not a second one.
key="pipeline-${commit:0:12}-$(printf "%s" "$task$validator" | sha256sum | cut -c1-16)-${PIPELINE_RUN_ID:-$$}"
set +e
thinkflow submit --workspace "$work/upload" --validate "$validator" --idempotency-key "$key" \
  --patch "$work/change.patch" --json "$task" > "$work/events.jsonl"
status=$?
set -e
job="$(tail -n 1 "$work/events.jsonl")" # with --json and --wait, the last line is the finished job
summary="$(node -e 'if(!process.argv[1]){process.stdout.write("no job (see above)");process.exit(0)}const j=JSON.parse(process.argv[1]);const v=j.validation;process.stdout.write(`${j.job_id} ${j.status}; validation: ${v?`${v.rounds} round(s), ${v.passed?"passed":"not passed"}`:"none"}`)' "$job")"
if [ "$status" -ne 0 ]; then
  say "the job did not succeed (thinkflow submit exited $status): $summary"
  exit 1
fi
say "job $summary"
[ -s "$work/change.patch" ] || { say "the job changed nothing: empty patch"; exit 1; }
say "patch: $(grep -c '^diff --git' "$work/change.patch") file(s) changed"

git clone -q "$repo" "$work/clean"
git -C "$work/clean" checkout -q "$commit"
git -C "$work/clean" apply --check "$work/change.patch"
git -C "$work/clean" apply "$work/change.patch"
say "git apply --check and git apply: ok"
git -C "$work/clean" status --short >&2
(cd "$work/clean" && sh -c "$validator") || { say "the validator fails on the patched checkout"; exit 1; }
say "the validator passes on the patched checkout"
