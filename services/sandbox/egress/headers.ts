import { authorityOf } from './target.ts';
import type { EgressTarget } from './types.ts';

// Hop-by-hop fields (RFC 9110 §7.6.1) belong to one connection and are not
// passed on; Node's client and server frame the bodies again themselves.
const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate',
  'te', 'trailer', 'transfer-encoding', 'upgrade',
]);

function pairs(raw: string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i] ?? '', raw[i + 1] ?? '']);
  return out;
}

/** Raw headers ([name, value, name, value…], as `rawHeaders`) without the hop-by-hop ones and those `Connection` names. */
function endToEnd(raw: string[], drop: ReadonlySet<string>): string[] {
  const all = pairs(raw);
  const named = new Set(
    all.filter(([name]) => name.toLowerCase() === 'connection').flatMap(([, value]) => value.split(',').map((t) => t.trim().toLowerCase())),
  );
  return all
    .filter(([name]) => {
      const lower = name.toLowerCase();
      return !HOP_BY_HOP.has(lower) && !drop.has(lower) && !named.has(lower);
    })
    .flat();
}

// Host is replaced by the target's authority (RFC 9112 §3.2.2): the upstream
// sees the host that was judged and dialled. Expect was answered by this
// proxy's server already. One upstream connection per request: close.
const REQUEST_DROP = new Set(['host', 'expect']);

export function upstreamRequestHeaders(raw: string[], target: EgressTarget): string[] {
  return ['Host', authorityOf(target, true), ...endToEnd(raw, REQUEST_DROP), 'Connection', 'close'];
}

export function clientResponseHeaders(raw: string[]): string[] {
  return endToEnd(raw, new Set());
}
