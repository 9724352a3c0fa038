/**
 * The headers the proxy sends on, both ways: hop-by-hop headers removed (RFC 9110 §7.6.1), the
 * forwarding headers the proxy vouches for, the gate's own cookie kept from the origin, and the
 * origin's `Airlock-Command` kept from the client. Pure functions, no I/O.
 */
import type { IncomingHttpHeaders } from 'node:http'
import { clientBehind, plainAddress, trustedChain, type TrustPolicy } from '../base/client-address.js'
import { COMMAND_HEADER } from '../gate/handle.js'

/**
 * Headers that describe one connection, not the message: never forwarded either way (RFC 9110
 * §7.6.1, and `Proxy-Connection`, which old clients still send). `Upgrade` is forwarded only on an
 * upgrade; `Expect` is answered by the proxy itself (it sends `100 Continue` once the gate admits).
 */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate',
  'expect',
])

/** How the proxy forwards a request's headers. */
export interface ForwardRules {
  /** The gate's pass cookie name, removed from the `Cookie` header (`undefined`: kept). */
  passCookie: string | undefined
}

/** What the proxy decided of the connection a request came on (trustProxy applied). */
export interface Hop {
  /** The client the proxy decided on: the peer, or behind trusted hops the address they named. */
  client: string
  /** `X-Forwarded-For` as the proxy vouches for it: the client, the trusted hops after it, the peer. */
  chain: readonly string[]
  /** `http` or `https`, as the client used (through trusted proxies: as they say). */
  proto: string
  /** The `Host` the client asked for. */
  host: string
}

/**
 * The hop of a request from `remote` (`encrypted`: it came over TLS) with these headers: behind a
 * trusted peer, the client its `X-Forwarded-For` names (read from the right) and the scheme its
 * last `X-Forwarded-Proto` says; otherwise the peer itself and the socket's scheme.
 */
export function hopOf(remote: string, encrypted: boolean, headers: IncomingHttpHeaders, trusts: TrustPolicy): Hop {
  const trusted = trusts(remote)
  const claimed = trusted ? lastValue(headers['x-forwarded-proto']) : ''
  const proto = claimed === 'https' || claimed === 'http' ? claimed : encrypted ? 'https' : 'http'
  const xff = headers['x-forwarded-for']
  return trusted
    ? {
        client: clientBehind(remote, xff, trusts),
        chain: trustedChain(remote, xff, trusts),
        proto,
        host: headers.host ?? '',
      }
    : { client: remote, chain: [remote], proto, host: headers.host ?? '' }
}

/** The last value of a header that may be a list (the one the nearest hop wrote), lowercased. */
function lastValue(header: string | string[] | undefined): string {
  const text = Array.isArray(header) ? header.join(',') : header
  if (text === undefined) return ''
  return text
    .slice(text.lastIndexOf(',') + 1)
    .trim()
    .toLowerCase()
}

/** Names a `Connection` header lists (lowercase): hop-by-hop too. */
function listedInConnection(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined
  // The usual values list nothing: no split, no set.
  if (typeof value === 'string' && (value.length === 10 || value.length === 5) && /^(keep-alive|close)$/i.test(value))
    return undefined
  const text = Array.isArray(value) ? value.join(',') : value
  let names: Set<string> | undefined
  for (const part of text.split(',')) {
    const name = part.trim().toLowerCase()
    if (name !== '' && name !== 'close' && name !== 'keep-alive') (names ??= new Set()).add(name)
  }
  return names
}

/** `for=` of a `Forwarded` element: an IPv6 address quoted and bracketed (RFC 7239 §6), `unknown` for no address. */
function forwardedFor(address: string): string {
  const plain = plainAddress(address)
  if (plain === undefined) return 'unknown'
  return plain.includes(':') ? `"[${plain}]"` : plain
}

/** The forwarding headers the proxy writes itself: whatever a client sent in them is dropped. */
const FORWARDING = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-real-ip', 'forwarded'])

/**
 * Headers that origins (PHP snippets, frameworks, CDNs' conventions) read as the client's address,
 * scheme, port or path, which only a proxy writes: dropped from every request, so a visitor cannot
 * pick its address for the origin (`HTTP_CLIENT_IP` is read first by many PHP snippets) nor route
 * past the gate (`X-Original-URL`, `X-Rewrite-URL`: older Symfony and IIS route by them).
 */
const CLIENT_WRITTEN = new Set([
  'client-ip',
  'true-client-ip',
  'x-client-ip',
  'cf-connecting-ip',
  'x-cluster-client-ip',
  'fastly-client-ip',
  'x-original-forwarded-for',
  'forwarded-for',
  'x-forwarded',
  'x-forwarded-server',
  'x-forwarded-port',
  'x-forwarded-prefix',
  'x-forwarded-ssl',
  'x-forwarded-scheme',
  'x-url-scheme',
  'front-end-https',
  'x-original-url',
  'x-rewrite-url',
  'x-original-host',
  'x-host',
  'x-proxyuser-ip',
  'wl-proxy-client-ip',
  'proxy-client-ip',
  'x-envoy-external-address',
])

/** Every header of a client's request the proxy does not pass on (one lookup a header). */
const DROPPED = new Set([...HOP_BY_HOP, ...FORWARDING, ...CLIENT_WRITTEN])

/** A `Forwarded` parameter value: a token as it is, anything else quoted (RFC 7239 §4). */
const forwardedValue = (value: string): string =>
  /^[A-Za-z0-9._-]+$/.test(value) ? value : `"${value.replace(/["\\\r\n]/g, '')}"`

/**
 * The headers sent to the origin, from the client's raw list (`req.rawHeaders`: names as sent,
 * duplicates kept): without hop-by-hop ones (nor those its `Connection` lists), without any
 * forwarding or client-address header the client sent, with the proxy's own
 * `X-Forwarded-For` (the chain it vouches for), `X-Forwarded-Proto`, `X-Forwarded-Host`,
 * `X-Real-IP` (the client it decided on) and `Forwarded`, and the pass cookie taken out of `Cookie`.
 * A flat list, as `rawHeaders`.
 */
export function requestHeaders(raw: readonly string[], hop: Hop, rules: ForwardRules): string[] {
  let listed: Set<string> | undefined
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === 10 && raw[i]!.toLowerCase() === 'connection') {
      for (const name of listedInConnection(raw[i + 1]) ?? []) (listed ??= new Set()).add(name)
    }
  }
  const out: string[] = []
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    const lower = name.toLowerCase()
    if (DROPPED.has(lower) || listed?.has(lower)) continue
    const value = raw[i + 1]!
    if (lower === 'cookie' && rules.passCookie !== undefined) {
      const cookie = withoutCookie(value, rules.passCookie)
      if (cookie !== '') out.push(name, cookie)
      continue
    }
    out.push(name, value)
  }
  out.push(
    'x-forwarded-for',
    hop.chain.join(', '),
    'x-forwarded-proto',
    hop.proto,
    'x-forwarded-host',
    hop.host,
    'x-real-ip',
    hop.client,
    'forwarded',
    `for=${forwardedFor(hop.client)};host=${forwardedValue(hop.host)};proto=${hop.proto}`,
  )
  return out
}

/** The headers of an upgrade request to the origin: as {@link requestHeaders}, with `Connection: upgrade` and the client's `Upgrade`. */
export function upgradeHeaders(raw: readonly string[], hop: Hop, rules: ForwardRules, upgrade: string): string[] {
  return [...requestHeaders(raw, hop, rules), 'connection', 'upgrade', 'upgrade', upgrade]
}

/** A `Cookie` header without the cookies named `name` ('' when none is left). */
export function withoutCookie(header: string, name: string): string {
  if (!header.includes(name)) return header
  return header
    .split(';')
    .filter((part) => {
      const eq = part.indexOf('=')
      return (eq < 0 ? part : part.slice(0, eq)).trim() !== name
    })
    .join(';')
    .trim()
}

/**
 * The origin's response headers as the client gets them, from its raw list (`[name, value, ...]`:
 * undici's bytes, or Node's `rawHeaders`): a flat list for `writeHead`, names as the origin wrote
 * them, bytes kept as they were (latin1 both ways); without hop-by-hop headers (nor those its
 * `Connection` lists) and without `Airlock-Command`, which is the proxy's to act on (`command`,
 * lowercased).
 */
export function responseHeaderList(raw: readonly (Buffer | string)[]): { list: string[]; command: string | undefined } {
  let listed: Set<string> | undefined
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === 10 && raw[i]!.toString().toLowerCase() === 'connection') {
      for (const name of listedInConnection(raw[i + 1]!.toString('latin1')) ?? []) (listed ??= new Set()).add(name)
    }
  }
  const list: string[] = []
  let command: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1')
    const lower = name.toLowerCase()
    if (HOP_BY_HOP.has(lower) || listed?.has(lower)) continue
    const value = raw[i + 1]!.toString('latin1')
    if (lower === COMMAND_HEADER) command = value.trim().toLowerCase()
    else list.push(name, value)
  }
  return { list, command }
}
