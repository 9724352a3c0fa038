/**
 * The headers the proxy sends on, both ways: hop-by-hop headers removed (RFC 9110 §7.6.1), the
 * forwarding headers the proxy vouches for, the gate's own cookie kept from the origin, and the
 * origin's `Airlock-Command` kept from the client. Pure functions, no I/O.
 */
import { COMMAND_HEADER } from '../gate/handle.js'

/**
 * Headers that describe one connection, not the message: never forwarded either way (RFC 9110
 * §7.6.1, and `Proxy-Connection`, which old clients still send). `Upgrade` is forwarded only on an
 * upgrade; `Expect` is answered by the proxy itself (it sends `100 Continue` once the gate admits).
 */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-authorization', 'proxy-authenticate', 'expect'])


/** How the proxy forwards a request's headers. */
export interface ForwardRules {
  /** Trust the forwarding headers a client sent (it is a proxy you run): append to them instead of replacing them. */
  trusted: boolean
  /** The gate's pass cookie name, removed from the `Cookie` header (`undefined`: kept). */
  passCookie: string | undefined
}

/** What the proxy knows of the connection a request came on. */
export interface Hop {
  /** The client's address as the proxy saw it. */
  remote: string
  /** `http` or `https`, as the client used (through trusted proxies: as they say). */
  proto: string
  /** The `Host` the client asked for. */
  host: string
}

/** Names a `Connection` header lists (lowercase): hop-by-hop too. */
function listedInConnection(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined
  // The usual values list nothing: no split, no set.
  if (typeof value === 'string' && (value.length === 10 || value.length === 5) && /^(keep-alive|close)$/i.test(value)) return undefined
  const text = Array.isArray(value) ? value.join(',') : value
  let names: Set<string> | undefined
  for (const part of text.split(',')) {
    const name = part.trim().toLowerCase()
    if (name !== '' && name !== 'close' && name !== 'keep-alive') (names ??= new Set()).add(name)
  }
  return names
}

/** `for=` of a `Forwarded` element: an IPv6 address quoted and bracketed (RFC 7239 §6). */
function forwardedFor(address: string): string {
  if (address.startsWith('::ffff:') && address.includes('.')) return address.slice(7)
  return address.includes(':') ? `"[${address}]"` : address
}

/** The forwarding headers a client may send, which the proxy sets itself. */
const FORWARDING = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-real-ip', 'forwarded'])

/**
 * The headers sent to the origin, from the client's raw list (`req.rawHeaders`: names as sent,
 * duplicates kept): without hop-by-hop ones (nor those its `Connection` lists), with
 * `X-Forwarded-For/-Proto/-Host`, `X-Real-IP` and `Forwarded` set to what the proxy saw (appended
 * to the client's when `rules.trusted`; `X-Real-IP` is the client's address, or with a trusted hop
 * the one it named), and the pass cookie taken out of `Cookie`. A flat list, as `rawHeaders`.
 */
export function requestHeaders(raw: readonly string[], hop: Hop, rules: ForwardRules): string[] {
  let listed: Set<string> | undefined
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === 10 && raw[i]!.toLowerCase() === 'connection') {
      for (const name of listedInConnection(raw[i + 1]) ?? []) (listed ??= new Set()).add(name)
    }
  }
  const out: string[] = []
  let xff = ''
  let proto = ''
  let host = ''
  let realIp = ''
  let forwarded = ''
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    const lower = name.toLowerCase()
    const value = raw[i + 1]!
    if (HOP_BY_HOP.has(lower) || listed?.has(lower)) continue
    if (FORWARDING.has(lower)) {
      if (!rules.trusted) continue
      if (lower === 'x-forwarded-for') xff = xff ? `${xff}, ${value}` : value
      else if (lower === 'forwarded') forwarded = forwarded ? `${forwarded}, ${value}` : value
      else if (lower === 'x-forwarded-proto') proto ||= value
      else if (lower === 'x-forwarded-host') host ||= value
      else realIp ||= value
      continue
    }
    if (lower === 'cookie' && rules.passCookie !== undefined) {
      const cookie = withoutCookie(value, rules.passCookie)
      if (cookie !== '') out.push(name, cookie)
      continue
    }
    out.push(name, value)
  }
  const element = `for=${forwardedFor(hop.remote)};host="${hop.host.includes('"') || hop.host.includes('\\') ? hop.host.replace(/["\\]/g, '') : hop.host}";proto=${hop.proto}`
  out.push(
    'x-forwarded-for',
    xff ? `${xff}, ${hop.remote}` : hop.remote,
    'x-forwarded-proto',
    proto || hop.proto,
    'x-forwarded-host',
    host || hop.host,
    'x-real-ip',
    realIp || xff.split(',')[0]!.trim() || hop.remote,
    'forwarded',
    forwarded ? `${forwarded}, ${element}` : element,
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
