// Webhook destinations (API.md additions, issue 10): refused addresses in
// every spelling, THINKFLOW_WEBHOOK_ALLOW, the resolved address is the one
// connected to, redirects are never followed, every attempt is recorded.
// Real HTTP on 127.0.0.1 only.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostAddresses, parseWebhookAllow, resolveWebhook } from '../../../services/jobs/webhook-destinations.ts';
import type { WebhookDelivery } from '../../../services/jobs/job-schemas.ts';
import { WebhookSender } from '../../../services/jobs/webhooks.ts';
import { loadConfig } from '../../../services/config/index.ts';

type Hit = { path: string; headers: IncomingHttpHeaders };
let receiver: Server;
let port = 0;
const hits: Hit[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    hits.push({ path: req.url ?? '', headers: req.headers });
    req.resume();
    if (req.url === '/redirect') res.writeHead(307, { location: `http://127.0.0.1:${port}/second` }).end();
    else res.writeHead(204).end();
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  port = (receiver.address() as AddressInfo).port;
});
afterAll(() => {
  receiver?.close();
});

const noDns = async (host: string): Promise<never> => {
  throw new Error(`no DNS in tests (${host})`);
};

describe('webhook destinations', () => {
  it.each([
    'http://127.0.0.1:9/hook',
    'http://127.1:9/',
    'http://0x7f000001/',
    'http://2130706433/',
    'http://[::1]:9/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://0.0.0.0:6379/',
    'http://[::]/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[fe80::1]/',
    'http://[64:ff9b::7f00:1]/',
  ])('unset allow list: %s is refused', async (url) => {
    const r = await resolveWebhook(url, null, noDns);
    expect(r).toMatchObject({ ok: false, retryable: false });
    if (!r.ok) expect(r.reason).toMatch(/loopback, link-local, unspecified or cloud metadata/);
  });

  it('a name is judged by every address it resolves to', async () => {
    const r = await resolveWebhook('http://localhost:6379/', null, async () => [{ address: '203.0.113.7', family: 4 }, { address: '127.0.0.1', family: 4 }]);
    expect(r).toMatchObject({ ok: false, retryable: false });
  });

  it('unset allow list: other addresses are fine; a resolution failure is retryable', async () => {
    expect(await resolveWebhook('https://hooks.example/x', null, async () => [{ address: '203.0.113.7', family: 4 }])).toMatchObject({ ok: true, address: '203.0.113.7' });
    expect(await resolveWebhook('https://hooks.example/x', null, noDns)).toMatchObject({ ok: false, retryable: true });
  });

  it('THINKFLOW_WEBHOOK_ALLOW: hosts, host:port and CIDRs; nothing else', async () => {
    const allow = parseWebhookAllow('127.0.0.1:8081, hooks.internal, 10.1.0.0/16, [::1]');
    const dns = async (host: string) => [{ address: host === 'hooks.internal' ? '10.9.9.9' : '203.0.113.7', family: 4 }];
    expect(await resolveWebhook('http://127.0.0.1:8081/', allow, dns)).toMatchObject({ ok: true });
    expect(await resolveWebhook('http://127.0.0.1:8082/', allow, dns)).toMatchObject({ ok: false });
    expect(await resolveWebhook('http://hooks.internal/', allow, dns)).toMatchObject({ ok: true, address: '10.9.9.9' });
    expect(await resolveWebhook('http://10.1.2.3/', allow, dns)).toMatchObject({ ok: true });
    expect(await resolveWebhook('http://[::1]:7/', allow, dns)).toMatchObject({ ok: true });
    expect(await resolveWebhook('http://other.example/', allow, dns)).toMatchObject({ ok: false });
    expect(() => parseWebhookAllow('10.0.0.0/99')).toThrow(/bad CIDR '10.0.0.0\/99'/);
  });

  it('is a setting of the env schema', () => {
    expect(loadConfig({}).webhookAllow).toBeNull();
    expect(loadConfig({ THINKFLOW_WEBHOOK_ALLOW: '127.0.0.1' }).webhookAllow).toBe('127.0.0.1');
  });
});

describe('WebhookSender', () => {
  function sender(allow: string | null, resolve?: (h: string) => Promise<{ address: string; family: number }[]>) {
    const recorded: WebhookDelivery[] = [];
    const s = new WebhookSender({ secret: 's', attempts: 3, baseDelayMs: 10, allow, record: async (_id, d) => { recorded.push(d); }, ...(resolve ? { resolve } : {}) });
    return { s, recorded };
  }

  it('refuses loopback when the allow list is unset: a 400 at submit, and a recorded failed delivery, never a request', async () => {
    const before = hits.length;
    const { s, recorded } = sender(null);
    expect(await s.refusal(`http://127.0.0.1:${port}/hook`)).toMatch(/refused/);
    s.send(`http://127.0.0.1:${port}/hook`, 'job_finished', { x: 1 }, 'job_a');
    await s.drain();
    expect(hits.length).toBe(before);
    expect(recorded).toEqual([{ delivery_id: expect.any(String), attempt: 1, at: expect.any(String), ok: false, error: expect.stringMatching(/refused: 127\.0\.0\.1 is a loopback/) }]);
  });

  it('a name that resolves to a refused address only at delivery is a recorded failed delivery', async () => {
    let calls = 0;
    const flipping = async () => [{ address: calls++ === 0 ? '203.0.113.7' : '127.0.0.1', family: 4 }];
    const { s, recorded } = sender(null, flipping);
    expect(await s.refusal(`http://rebind.test:${port}/hook`)).toBeNull(); // fine at submit
    s.send(`http://rebind.test:${port}/hook`, 'job_finished', {}, 'job_b');
    await s.drain();
    expect(recorded).toMatchObject([{ attempt: 1, ok: false, error: expect.stringMatching(/127\.0\.0\.1 is a loopback/) }]);
  });

  it('connects to the address the check resolved, with the URL host in the Host header', async () => {
    const { s, recorded } = sender('hooks.test', async () => [{ address: '127.0.0.1', family: 4 }]);
    s.send(`http://hooks.test:${port}/pinned`, 'job_finished', {}, 'job_c');
    await s.drain();
    expect(recorded).toMatchObject([{ attempt: 1, ok: true, status_code: 204 }]);
    const hit = hits.find((h) => h.path === '/pinned')!;
    expect(hit.headers.host).toBe(`hooks.test:${port}`);
  });

  it('never follows a redirect, and does not retry it', async () => {
    const { s, recorded } = sender('127.0.0.1');
    s.send(`http://127.0.0.1:${port}/redirect`, 'job_finished', {}, 'job_d');
    await s.drain();
    expect(hits.some((h) => h.path === '/second')).toBe(false);
    expect(recorded).toEqual([{ delivery_id: expect.any(String), attempt: 1, at: expect.any(String), ok: false, status_code: 307, error: `redirect to http://127.0.0.1:${port}/second not followed` }]);
  });
});

// Issue 18: a webhook to the host's Docker bridge address (172.17.0.1) was
// delivered. The interface list and the resolver are injected; the one test
// that delivers dials the 127.0.0.1 receiver whatever address was checked.
describe("the host's own interface addresses", () => {
  const OWN = ['127.0.0.1', '::1', '172.17.0.1', '192.168.1.20', 'fe80::42:acff:fe11:2%docker0', '2001:db8::5'];
  const own = () => OWN;

  it.each([
    'http://172.17.0.1:8080/hook',
    'http://192.168.1.20:3000/',
    'http://[2001:db8::5]/',
    'http://[::ffff:172.17.0.1]/',
    'http://[::ffff:ac11:1]/',
    'http://2886795265/', // 172.17.0.1 as one number
  ])('unset allow list: %s is refused', async (url) => {
    const r = await resolveWebhook(url, null, noDns, own);
    expect(r).toMatchObject({ ok: false, retryable: false });
    if (!r.ok) expect(r.reason).toMatch(/own interfaces \(name it in THINKFLOW_WEBHOOK_ALLOW/);
  });

  it('a name is refused when any of its addresses is an own one; other addresses pass', async () => {
    const dns = async () => [{ address: '203.0.113.7', family: 4 }, { address: '192.168.1.20', family: 4 }];
    expect(await resolveWebhook('http://nas.test/', null, dns, own)).toMatchObject({ ok: false, reason: expect.stringMatching(/192\.168\.1\.20 is an address of this host/) });
    expect(await resolveWebhook('http://192.168.1.21/', null, noDns, own)).toMatchObject({ ok: true, address: '192.168.1.21' });
  });

  it('the list is read at every check (an interface that appears later is refused at once)', async () => {
    const list = ['127.0.0.1'];
    expect(await resolveWebhook('http://10.200.0.1/', null, noDns, () => list)).toMatchObject({ ok: true });
    list.push('10.200.0.1'); // e.g. a Docker network created since
    expect(await resolveWebhook('http://10.200.0.1/', null, noDns, () => list)).toMatchObject({ ok: false });
  });

  it('THINKFLOW_WEBHOOK_ALLOW must name an own address: its IP or the host name, not a CIDR that covers it', async () => {
    const bridge = async () => [{ address: '172.17.0.1', family: 4 }];
    const wide = parseWebhookAllow('172.16.0.0/12');
    expect(await resolveWebhook('http://172.17.0.1/', wide, noDns, own)).toMatchObject({ ok: false, reason: expect.stringMatching(/must name it/) });
    expect(await resolveWebhook('http://172.18.0.5/', wide, noDns, own)).toMatchObject({ ok: true });
    expect(await resolveWebhook('http://172.17.0.1/', parseWebhookAllow('172.17.0.1'), noDns, own)).toMatchObject({ ok: true });
    expect(await resolveWebhook('http://172.17.0.1/', parseWebhookAllow('172.17.0.1/32'), noDns, own)).toMatchObject({ ok: true });
    expect(await resolveWebhook('http://172.17.0.1:8080/', parseWebhookAllow('172.17.0.1:8080'), noDns, own)).toMatchObject({ ok: true });
    expect(await resolveWebhook('http://172.17.0.1:9090/', parseWebhookAllow('172.17.0.1:8080'), noDns, own)).toMatchObject({ ok: false });
    expect(await resolveWebhook('http://bridge.test/', parseWebhookAllow('bridge.test'), bridge, own)).toMatchObject({ ok: true, address: '172.17.0.1' });
  });

  it("by default the list is this machine's own interfaces, every family", async () => {
    const real = Object.values(networkInterfaces()).flatMap((l) => (l ?? []).map((i) => i));
    expect(hostAddresses().sort()).toEqual(real.map((i) => i.address).sort());
    // Checked only (resolveWebhook never connects): each address of this machine is refused.
    for (const i of real) {
      const url = i.family === 'IPv6' ? `http://[${i.address.replace(/%.*$/, '')}]:8080/` : `http://${i.address}:8080/`;
      const r = await resolveWebhook(url, null, noDns);
      expect(r, url).toMatchObject({ ok: false, retryable: false });
    }
  });

  it('WebhookSender: refused without dialing; named in the allow list, delivered to the checked address', async () => {
    const dialed: { address: string; port: number }[] = [];
    const dial = (to: { address: string; family: 4 | 6; port: number }) => {
      dialed.push({ address: to.address, port: to.port });
      return connect(port, '127.0.0.1'); // the local receiver stands in for the bridge
    };
    // TEST-NET-1 as the bridge here: should the dialer ever be bypassed, nothing answers there.
    const bridge = '192.0.2.10';
    const make = (allow: string | null) => {
      const recorded: WebhookDelivery[] = [];
      const s = new WebhookSender({ secret: 's', attempts: 2, baseDelayMs: 10, allow, interfaces: () => [...OWN, bridge], timeoutMs: 2000, dial, resolve: async () => [{ address: bridge, family: 4 }], record: async (_id, d) => { recorded.push(d); } });
      return { s, recorded };
    };
    const refused = make(null);
    expect(await refused.s.refusal('http://bridge.test:8080/own')).toMatch(/own interfaces/);
    refused.s.send('http://bridge.test:8080/own', 'job_finished', {}, 'job_own');
    await refused.s.drain();
    expect(refused.recorded).toMatchObject([{ attempt: 1, ok: false, error: expect.stringMatching(/192\.0\.2\.10 is an address of this host's own interfaces/) }]);
    expect(dialed).toEqual([]);

    const named = make(`${bridge}:8080`);
    named.s.send('http://bridge.test:8080/named', 'job_finished', {}, 'job_named');
    await named.s.drain();
    expect(named.recorded).toMatchObject([{ attempt: 1, ok: true, status_code: 204 }]);
    expect(dialed).toEqual([{ address: bridge, port: 8080 }]);
    expect(hits.find((h) => h.path === '/named')?.headers.host).toBe('bridge.test:8080');
  });
});
