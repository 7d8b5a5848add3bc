#!/usr/bin/env node
// Writes sandbox-image/seccomp.json: Docker's own default profile
// (docker-default-v20.10.24.json, byte for byte moby's
// profiles/seccomp/default.json at tag v20.10.24, the daemon this project is
// tested on) with the syscalls of DENIED taken out of every allow rule and
// refused by one explicit rule (EPERM). Run it after changing DENIED or the
// upstream copy: `node sandbox-image/seccomp/build-profile.mjs`; a unit test
// fails while seccomp.json differs from what this prints.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const UPSTREAM = 'docker-default-v20.10.24.json';
const EPERM = 1;

/**
 * Syscalls Docker's default allows that a sandbox never needs, and why.
 * Already refused by Docker's default for a container without the matching
 * capability (ours has none of them): keyctl, add_key, request_key,
 * userfaultfd (not listed at all), bpf, perf_event_open, unshare, setns,
 * mount, clone with namespace flags (CAP_SYS_ADMIN only).
 */
export const DENIED = {
  // A second system-call interface whose queued operations no seccomp filter
  // sees, with a long record of kernel privilege escalations (disabled by
  // default on ChromeOS, Android and Google's servers). Nothing in the image
  // needs it: Node 18's libuv, Python and coreutils never use it, and newer
  // libuv falls back to epoll/threads when setup fails.
  io_uring_setup: 'io_uring: unfiltered syscall interface, frequent kernel escalations',
  io_uring_enter: 'io_uring: unfiltered syscall interface, frequent kernel escalations',
  io_uring_register: 'io_uring: unfiltered syscall interface, frequent kernel escalations',
  // Docker allows it whenever the container holds CAP_DAC_READ_SEARCH, and
  // ours does (the executor's quota walk). It is the syscall of the "shocker"
  // escape (opening any host file by handle through a mount). Commands have
  // no capability and the executor (Node) never calls it, so only a
  // compromised executor could, and then it should not.
  open_by_handle_at: 'open files by handle (the "shocker" escape); allowed upstream with CAP_DAC_READ_SEARCH, which the executor holds',
};

/** Docker's profile with DENIED removed from every allow rule and refused explicitly. */
export function deriveProfile(upstream) {
  const denied = new Set(Object.keys(DENIED));
  const syscalls = upstream.syscalls
    .map((rule) => (rule.action === 'SCMP_ACT_ALLOW' ? { ...rule, names: rule.names.filter((n) => !denied.has(n)) } : rule))
    .filter((rule) => rule.names.length > 0);
  syscalls.push({
    names: [...denied],
    action: 'SCMP_ACT_ERRNO',
    errnoRet: EPERM,
    args: [],
    comment: 'thinkflow: never needed in a sandbox; see sandbox-image/seccomp/build-profile.mjs',
    includes: {},
    excludes: {},
  });
  return { ...upstream, syscalls };
}

export function profileText(upstream) {
  return JSON.stringify(deriveProfile(upstream), null, '\t') + '\n';
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const upstream = JSON.parse(readFileSync(new URL(UPSTREAM, import.meta.url), 'utf8'));
  writeFileSync(new URL('../seccomp.json', import.meta.url), profileText(upstream));
}
