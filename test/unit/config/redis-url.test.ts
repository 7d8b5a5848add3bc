import { describe, expect, it } from 'vitest';
import { loadConfig, parseRedisUrl } from '../../../services/config/index.ts';

describe('REDIS_URL (API.md additions: cluster and sentinel)', () => {
  it('one Redis passes through as is', () => {
    expect(parseRedisUrl('redis://127.0.0.1:6379/2')).toEqual({ kind: 'single', url: 'redis://127.0.0.1:6379/2' });
    expect(parseRedisUrl('rediss://:pw@r.example:6380').kind).toBe('single');
  });

  it('a cluster: its seed nodes, credentials for every node', () => {
    expect(parseRedisUrl('redis+cluster://127.0.0.1:7101,127.0.0.1:7102,h3.local:7103')).toEqual({
      kind: 'cluster', tls: false, nodes: [{ host: '127.0.0.1', port: 7101 }, { host: '127.0.0.1', port: 7102 }, { host: 'h3.local', port: 7103 }],
    });
    expect(parseRedisUrl('rediss+cluster://app:s%40cret@[::1]:7000')).toEqual({
      kind: 'cluster', tls: true, username: 'app', password: 's@cret', nodes: [{ host: '::1', port: 7000 }],
    });
  });

  it('sentinels: hosts, master name, optional db and sentinel password', () => {
    expect(parseRedisUrl('redis+sentinel://:pw@s1:26379,s2:26379/mymaster')).toEqual({
      kind: 'sentinel', tls: false, password: 'pw', master: 'mymaster', db: 0, sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26379 }],
    });
    expect(parseRedisUrl('redis+sentinel://s1:26379/m/3?sentinelPassword=x')).toMatchObject({ master: 'm', db: 3, sentinelPassword: 'x' });
  });

  it.each([
    ['127.0.0.1:6379', /expected one of redis:\/\//],
    ['http://127.0.0.1:6379', /unknown scheme 'http:\/\/'/],
    ['redis+cluster://', /no hosts/],
    ['redis+cluster://h1:7101,h2', /host 'h2' is not host:port/],
    ['redis+cluster://h1:99999', /port 99999 of 'h1:99999' is out of range/],
    ['redis+cluster://h1:7101/0', /takes no path/],
    ['redis+sentinel://s1:26379', /missing the master name/],
    ['redis+sentinel://s1:26379/', /missing the master name/],
    ['redis+sentinel://s1:26379/m/x', /expected \/MASTER or \/MASTER\/DB/],
    ['redis://exa mple:6379', /not a valid URL/],
  ])('%s is refused naming what is wrong', (url, why) => {
    expect(() => parseRedisUrl(url)).toThrow(why);
  });

  it('the config refuses a bad one at start, and hides the password in the message', () => {
    expect(() => loadConfig({ REDIS_URL: 'redis+cluster://:hunter2@h1' })).toThrow(/REDIS_URL 'redis\+cluster:\/\/:\*\*\*@h1': host 'h1' is not host:port/);
    expect(() => loadConfig({ REDIS_URL: 'redis+cluster://:hunter2@h1' })).not.toThrow(/hunter2/);
    expect(loadConfig({ REDIS_URL: 'redis+cluster://127.0.0.1:7101' }).redisUrl).toBe('redis+cluster://127.0.0.1:7101');
  });
});
