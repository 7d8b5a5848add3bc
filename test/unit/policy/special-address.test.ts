// Which addresses the egress proxy never dials on a name's word (POLICY.md
// §8), and how `host:port` is read. ipaddr.js does the parsing; the table
// pins how the policy classifies each range, embedded IPv4 included.
import { describe, expect, it } from 'vitest';
import { parseHostPort, showHostPort, specialAddress, type SpecialAddress } from '../../../services/policy/index.ts';

describe('specialAddress', () => {
  it.each<[string, SpecialAddress | null]>([
    // IPv4
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', null],
    ['172.15.255.255', null],
    ['192.168.0.1', 'private'],
    ['192.168.255.255', 'private'],
    ['100.64.0.1', 'private'],
    ['100.127.255.255', 'private'],
    ['100.128.0.1', null],
    ['169.254.0.1', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['8.8.8.8', null],
    ['93.184.215.14', null],
    // Spellings a resolver accepts for 127.0.0.1 and 10.0.0.1
    ['127.1', 'loopback'],
    ['0x7f.0.0.1', 'loopback'],
    ['0177.0.0.1', 'loopback'],
    ['2130706433', 'loopback'],
    ['012.0.0.1', 'private'],
    // IPv6
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fd00:ec2::254', 'metadata'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['3fff::1', 'reserved'],
    ['100::1', 'reserved'],
    ['2001::1', 'reserved'],
    ['4000::1', 'reserved'],
    ['::7f00:1', 'reserved'],
    ['2606:4700:4700::1111', null],
    ['2a00:1450:4001::200e', null],
    // IPv6 carrying IPv4: judged by the IPv4 address
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['[::ffff:10.1.2.3]', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:8.8.8.8', null],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['64:ff9b::808:808', null],
    ['64:ff9b:1::1', 'private'],
    ['2002:7f00:1::1', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
    ['2002:808:808::1', null],
    ['::ffff:0:7f00:1', 'loopback'],
    // Not addresses
    ['localhost', 'invalid'],
    ['', 'invalid'],
    ['1.2.3.4.5', 'invalid'],
    ['::g', 'invalid'],
  ])('%s → %s', (ip, expected) => {
    expect(specialAddress(ip)).toBe(expected);
  });
});

describe('parseHostPort', () => {
  it.each<[string, ReturnType<typeof parseHostPort>]>([
    ['a.example', { host: 'a.example' }],
    ['a.example:443', { host: 'a.example', port: 443 }],
    ['A.Example.:8080', { host: 'A.Example.', port: 8080 }],
    ['10.0.0.1:1', { host: '10.0.0.1', port: 1 }],
    ['[::1]:443', { host: '::1', port: 443 }],
    ['[::1]', { host: '::1' }],
    ['::1', { host: '::1' }],
    ['2001:db8::1', { host: '2001:db8::1' }],
    ['a.example:65535', { host: 'a.example', port: 65535 }],
    ['a.example:65536', { error: 'port "65536" is not a number from 1 to 65535' }],
    ['a.example:', { error: 'port "" is not a number from 1 to 65535' }],
    ['a.example:+1', { error: 'port "+1" is not a number from 1 to 65535' }],
    [':443', { error: 'no host' }],
    ['', { error: 'no host' }],
    ['[::1]443', { error: 'unexpected "443" after ]' }],
    ['[::1', { error: 'an IPv6 address opened with [ is not closed' }],
    ['[10.0.0.1]:80', { error: '"10.0.0.1" in brackets is not an IPv6 address' }],
    ['a:b:c', { error: '"a:b:c" is not a host name or IP address' }],
    ['-x-.example', { error: '"-x-.example" is not a host name or IP address' }],
  ])('%j', (text, expected) => {
    expect(parseHostPort(text)).toEqual(expected);
  });

  it('is undone by showHostPort', () => {
    expect(showHostPort('::1', 443)).toBe('[::1]:443');
    expect(showHostPort('a.example', 80)).toBe('a.example:80');
    expect(showHostPort('a.example', undefined)).toBe('a.example');
  });
});
