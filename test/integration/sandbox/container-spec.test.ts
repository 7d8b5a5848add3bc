// The option bag maps one to one onto the container spec (no Docker needed).
import { describe, expect, it } from 'vitest';
import { resolveSandboxOptions, sessionSlug, toContainerSpec, type SandboxOptions } from '../../../services/sandbox/index.ts';
import { shippedSeccompProfile } from '../../../services/sandbox/sandbox-options.ts';

describe('resolveSandboxOptions', () => {
  it('defaults to the hardened settings of the issue', () => {
    const o = resolveSandboxOptions({});
    expect(o).toMatchObject({
      networkMode: 'none',
      capDrop: ['ALL'],
      capAdd: [],
      noNewPrivileges: true,
      readOnlyRootfs: true,
      user: '1000:1000',
      pidsLimit: 256,
      memoryBytes: 1024 ** 3,
      memorySwapBytes: 1024 ** 3,
      cpus: 1,
      bashTimeoutMs: 120_000,
      outputCapBytes: 65_536,
    });
    expect(Object.keys(o.tmpfs)).toContain('/tmp');
  });

  it('takes the image it is given (the env schema passes THINKFLOW_SANDBOX_IMAGE), never process.env', () => {
    const before = process.env.THINKFLOW_SANDBOX_IMAGE;
    process.env.THINKFLOW_SANDBOX_IMAGE = 'example/img:1';
    try {
      expect(resolveSandboxOptions().image).toBe('thinkflow/sandbox:latest');
      expect(resolveSandboxOptions({ image: 'x:2' }).image).toBe('x:2');
    } finally {
      if (before === undefined) delete process.env.THINKFLOW_SANDBOX_IMAGE;
      else process.env.THINKFLOW_SANDBOX_IMAGE = before;
    }
  });
});

describe('toContainerSpec', () => {
  it('maps every hardening option and mounts only the workspace volume (twice: once where only root reaches) and the session\'s egress directory', () => {
    const spec = toContainerSpec('ses_abc', 'vol-1', resolveSandboxOptions({ nofile: 99, cpus: 0.5 }));
    expect(spec.name).toBe('thinkflow-ses_abc');
    expect(spec.Labels).toMatchObject({ 'thinkflow.managed': 'true', 'thinkflow.session': 'ses_abc' });
    // The executor is root with three capabilities; commands run as the configured user with none.
    expect(spec.User).toBe('0:0');
    expect(spec.Env).toEqual(['THINKFLOW_RUN_AS=1000:1000', 'THINKFLOW_WORKSPACE_FS=watchdog', 'THINKFLOW_EGRESS_RELAY_MAX=64']);
    expect(toContainerSpec('s', 'v', resolveSandboxOptions({ egressRelayMaxConnections: 5 })).Env).toContain('THINKFLOW_EGRESS_RELAY_MAX=5');
    // The executor watches the quota only when the kernel does not.
    expect(toContainerSpec('ses_abc', 'vol-1', resolveSandboxOptions({}), 'loop').Env).toContain('THINKFLOW_WORKSPACE_FS=loop');
    expect(spec.HostConfig?.CapAdd).toEqual(['SETUID', 'SETGID', 'SETPCAP', 'DAC_READ_SEARCH']);
    expect(spec.HostConfig).toMatchObject({
      NetworkMode: 'none',
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges', `seccomp=${shippedSeccompProfile()}`],
      ReadonlyRootfs: true,
      PidsLimit: 256,
      Memory: 1024 ** 3,
      MemorySwap: 1024 ** 3,
      NanoCpus: 500_000_000,
      Ulimits: [
        { Name: 'nofile', Soft: 99, Hard: 99 },
        { Name: 'fsize', Soft: 2048 * 1024 ** 2, Hard: 2048 * 1024 ** 2 },
      ],
      Mounts: [
        { Type: 'volume', Source: 'vol-1', Target: '/workspace' },
        { Type: 'volume', Source: 'vol-1', Target: '/var/lib/thinkflow/ws' },
        // The one host path: this session's egress directory, below the root-only /var/lib/thinkflow.
        { Type: 'bind', Source: '/var/lib/thinkflow/egress/thinkflow-ses_abc', Target: '/var/lib/thinkflow/egress', ReadOnly: false },
      ],
      Privileged: false,
    });
    expect(spec.HostConfig?.Binds).toBeUndefined();
    expect(spec.HostConfig?.NetworkMode).toBe('none');
    expect(toContainerSpec('ses_abc', 'v', resolveSandboxOptions({ egressDir: 'rel/dir', namePrefix: 'p-' })).HostConfig?.Mounts?.[2]?.Source)
      .toBe(`${process.cwd()}/rel/dir/p-ses_abc`);
    // The baseline's directory is hidden from commands under an empty read-only tmpfs.
    expect(spec.HostConfig?.Tmpfs?.['/workspace/.thinkflow-private']).toBe('ro,nosuid,nodev,noexec,size=4k,mode=0555');
    const secOpt = (o: SandboxOptions) => toContainerSpec('s', 'v', resolveSandboxOptions(o)).HostConfig?.SecurityOpt;
    expect(secOpt({ noNewPrivileges: false, seccompProfile: 'default' })).toEqual([]);
    expect(secOpt({ noNewPrivileges: false, seccompProfile: 'unconfined' })).toEqual(['seccomp=unconfined']);
    expect(secOpt({ seccompProfile: '{"defaultAction":"SCMP_ACT_ALLOW"}' })).toEqual(['no-new-privileges', 'seccomp={"defaultAction":"SCMP_ACT_ALLOW"}']);
  });
});

describe('sessionSlug', () => {
  it('keeps ordinary ids and makes any other id safe and distinct', () => {
    expect(sessionSlug('ses_abc234')).toBe('ses_abc234');
    const a = sessionSlug('Ses/../X');
    const b = sessionSlug('ses/../x');
    expect(a).toMatch(/^[a-z0-9][a-z0-9_.-]*$/);
    expect(a).not.toBe(b);
    expect(sessionSlug('x'.repeat(500)).length).toBeLessThan(90);
    expect(() => sessionSlug('')).toThrow();
  });
});
