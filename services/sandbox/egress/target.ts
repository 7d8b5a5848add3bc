import type { EgressTarget } from './types.ts';

// The target is read with the WHATWG URL parser, and that one reading is what
// the policy judges, what is resolved and dialled, and what the upstream sees
// as Host: `0x7f.1` is judged as 127.0.0.1, `Example.COM.` as example.com, and
// a plain request's own Host header is never consulted (RFC 9112 §3.2.2 says a
// proxy replaces it with the absolute-form target's authority).

export type ParsedTarget = { ok: true; target: EgressTarget; path: string } | { ok: false; message: string };

const bad = (message: string): ParsedTarget => ({ ok: false, message });

/** The authority-form of CONNECT: `host:port`, the port required. */
export function connectTarget(authority: string): ParsedTarget {
  const m = /^([^\s/?#@\\]+):(\d{1,5})$/.exec(authority);
  if (!m) return bad(`CONNECT needs host:port, got "${authority}"`);
  return fromUrl(`http://${m[1]}:${m[2]}/`, Number(m[2]), authority);
}

/** The absolute-form of a plain request (`GET http://host[:port]/path`). */
export function absoluteTarget(requestTarget: string): ParsedTarget {
  if (requestTarget.startsWith('/') || requestTarget === '*') {
    return bad('this is a proxy: send the absolute URL (GET http://host/path) or use CONNECT, not an origin-form request');
  }
  let scheme: string;
  try {
    scheme = new URL(requestTarget).protocol;
  } catch {
    return bad(`the request target "${requestTarget}" is not a URL`);
  }
  if (scheme !== 'http:') return bad(`only http:// is forwarded as a plain request (use CONNECT for ${scheme}//)`);
  return fromUrl(requestTarget, undefined, requestTarget);
}

function fromUrl(text: string, explicitPort: number | undefined, shown: string): ParsedTarget {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return bad(`the target "${shown}" is not a valid host`);
  }
  if (url.username || url.password) return bad('a target with user information is not forwarded');
  const port = explicitPort ?? (url.port === '' ? 80 : Number(url.port));
  if (!Number.isInteger(port) || port < 1 || port > 65535) return bad(`port out of range in "${shown}"`);
  const host = normaliseHost(url.hostname);
  if (!host) return bad(`no host in "${shown}"`);
  return { ok: true, target: { host, port }, path: `${url.pathname}${url.search}` };
}

/** IPv6 without brackets, and no trailing dot: one spelling per name, so a rule cannot be sidestepped by `name.`. */
function normaliseHost(hostname: string): string {
  const unbracketed = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return (unbracketed.endsWith('.') ? unbracketed.slice(0, -1) : unbracketed).toLowerCase();
}

/** `host[:port]` for a Host header and messages (IPv6 in brackets, port 80 left out when `omitDefault`). */
export function authorityOf(target: EgressTarget, omitDefault = false): string {
  const host = target.host.includes(':') ? `[${target.host}]` : target.host;
  return omitDefault && target.port === 80 ? host : `${host}:${target.port}`;
}
