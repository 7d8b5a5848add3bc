// The shipped seccomp profile is Docker's own default (the upstream copy,
// untouched) minus exactly the syscalls build-profile.mjs names and argues.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DENIED, deriveProfile, profileText, UPSTREAM, type SeccompProfile, type SeccompRule } from '../../../sandbox-image/seccomp/build-profile.mjs';

const dir = new URL('../../../sandbox-image/', import.meta.url);
const upstreamText = readFileSync(new URL(`seccomp/${UPSTREAM}`, dir), 'utf8');
const upstream = JSON.parse(upstreamText) as SeccompProfile;
const shipped = readFileSync(new URL('seccomp.json', dir), 'utf8');

type Rule = SeccompRule;
const allowed = (p: SeccompProfile) => new Set(p.syscalls.filter((r) => r.action === 'SCMP_ACT_ALLOW').flatMap((r) => r.names));

describe('sandbox-image/seccomp.json', () => {
  it('the upstream copy is moby v20.10.24 profiles/seccomp/default.json byte for byte', () => {
    expect(createHash('sha256').update(upstreamText).digest('hex')).toBe('ce3585b856aa4a193671fd8280d0d0612a998bd3f10bdb2f8530dfa958c6197f');
  });

  it('is what build-profile.mjs derives from the upstream copy (regenerate after editing either)', () => {
    expect(shipped).toBe(profileText(upstream));
  });

  it('differs from Docker default only by the denied syscalls, refused with EPERM', () => {
    const ours = deriveProfile(upstream);
    const denied = Object.keys(DENIED);
    expect(denied).toEqual(expect.arrayContaining(['io_uring_setup', 'io_uring_enter', 'io_uring_register']));
    const before = allowed(upstream);
    const after = allowed(ours);
    expect([...before].filter((n) => !after.has(n)).sort()).toEqual([...denied].sort());
    expect([...after].filter((n) => !before.has(n))).toEqual([]);
    expect(ours.defaultAction).toBe(upstream.defaultAction);
    expect(ours.syscalls.at(-1)).toMatchObject({ names: denied, action: 'SCMP_ACT_ERRNO', errnoRet: 1 });
  });

  it('the syscalls argued as already refused are indeed not allowed without a capability', () => {
    const capFree = new Set(upstream.syscalls.filter((r: Rule) => r.action === 'SCMP_ACT_ALLOW' && !r.includes?.caps).flatMap((r: Rule) => r.names));
    for (const name of ['keyctl', 'add_key', 'request_key', 'userfaultfd', 'bpf', 'perf_event_open', 'unshare', 'setns', 'mount']) {
      expect(capFree.has(name), name).toBe(false);
    }
  });
});
