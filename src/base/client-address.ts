/**
 * Who the client is: its address behind the proxies an operator trusts (`trustProxy`), written the
 * way proxies write it (`1.2.3.4:80`, `[2001:db8::1]:443`, `::ffff:1.2.3.4`), and the block a client
 * is counted by (an IPv4 address, an IPv6 /64). Shared by the gate's client share, the proxy and the
 * dashboard's sign-in slow-down, so all three count one client the same way. No dependencies.
 */
import { BlockList, isIP, isIPv4, isIPv6 } from 'node:net'
import { optionError } from './errors.js'
import { received } from './validate.js'

/** Named sets of addresses a `trustProxy` list may use, as Express's `trust proxy` names them. */
const NAMED: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
}

/**
 * An address as a proxy may have written it, plain: brackets and a port taken off (`[::1]:80`,
 * `1.2.3.4:80`), an IPv4-mapped IPv6 address as IPv4, a zone kept. `undefined` when it is no address.
 */
export function plainAddress(text: string): string | undefined {
  let a = text.trim()
  if (a.startsWith('[')) {
    const end = a.indexOf(']')
    if (end < 0) return undefined
    a = a.slice(1, end)
  } else if (a.indexOf(':') > 0 && a.indexOf(':') === a.lastIndexOf(':')) {
    a = a.slice(0, a.indexOf(':')) // IPv4 with a port
  }
  if (a.startsWith('::ffff:') && isIPv4(a.slice(7))) a = a.slice(7)
  return isIP(a.split('%')[0] ?? '') === 0 ? undefined : a
}

/**
 * The block a client is counted by: `ip:1.2.3.4` for IPv4 (and IPv4-mapped IPv6), `ip:2001:db8:0:1::/64`
 * for IPv6; `undefined` when `text` is no address ({@link plainAddress} reads it first).
 */
export function addressBlock(text: string): string | undefined {
  const plain = plainAddress(text)
  if (plain === undefined) return undefined
  if (isIPv4(plain)) return `ip:${plain}`
  const bare = plain.split('%')[0]!
  if (!isIPv6(bare)) return undefined
  const [head = '', tail] = bare.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const groups =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
  return `ip:${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`
}

/**
 * Whether a hop's forwarding headers are believed: `address` is the hop's, `hop` how far it is from
 * this server (0, the default: the connection's peer; 1: the nearest `X-Forwarded-For` entry, the
 * one the peer wrote; and so on), as Express's and Fastify's trust functions (proxy-addr) are asked.
 */
export type TrustPolicy = (address: string, hop?: number) => boolean

/**
 * A `trustProxy` option: `false` (nobody), `true` (every hop), a number of hops (`1`: the peer is
 * your one proxy), or addresses, CIDRs and the names `loopback`, `linklocal`, `uniquelocal` (an
 * array, or one comma-separated string). As Express's `trust proxy` and Fastify's `trustProxy` take it.
 */
export type TrustProxyOption = boolean | number | string | readonly string[]

export const TRUST_NONE: TrustPolicy = () => false

/** The most hops a `trustProxy` count may name (2^31 − 1: a count, not a timer; any real chain is far shorter). */
const MAX_HOPS = 2 ** 31 - 1

/**
 * A `trustProxy` option as a policy: `false` (nobody), `true` (every peer: only where every
 * client comes through proxies you run), a number of hops `n` (the peer and the `n − 1` nearest
 * `X-Forwarded-For` entries are trusted: the client is the `n`-th entry from the right, as Express
 * and Fastify read a number; `0`: nobody), or addresses, CIDRs and the names `loopback`,
 * `linklocal`, `uniquelocal` (an array, or one comma-separated string). Throws `ERR_AIRLOCK_OPTION`
 * naming the entry that is none of these.
 */
export function trustPolicy(option: unknown, name = 'trustProxy'): TrustPolicy {
  if (option === false || option === undefined) return TRUST_NONE
  if (option === true) return () => true
  const example = `('10.0.0.0/8', ['10.0.0.5', '::1'] or 'loopback')`
  const shapes = `true, false, a number of hops (1: the peer is your one proxy), or addresses and CIDRs ${example}`
  if (typeof option === 'number') {
    if (!Number.isSafeInteger(option) || option < 0 || option > MAX_HOPS)
      optionError(`${name} must be ${shapes}, got ${received(option)}`)
    // An entry that is no address is never trusted, so it ends the walk as it does for a list.
    return option === 0 ? TRUST_NONE : (address, hop = 0) => hop < option && plainAddress(address) !== undefined
  }
  const list = typeof option === 'string' ? option.split(',') : option
  if (!Array.isArray(list) || list.some((a) => typeof a !== 'string'))
    optionError(`${name} must be ${shapes}, got ${received(option)}`)
  const blocks = new BlockList()
  const add = (entry: string): void => {
    const [address = '', bits] = entry.split('/')
    const family = isIP(address)
    const max = family === 6 ? 128 : 32
    if (family === 0 || (bits !== undefined && (!/^\d+$/.test(bits) || Number(bits) > max))) {
      optionError(`${name}: '${entry}' is not an address, a CIDR or one of ${Object.keys(NAMED).join(', ')} ${example}`)
    }
    const type = family === 6 ? 'ipv6' : 'ipv4'
    if (bits === undefined) blocks.addAddress(address, type)
    else blocks.addSubnet(address, Number(bits), type)
  }
  for (const raw of list as string[]) {
    const entry = raw.trim()
    if (Object.hasOwn(NAMED, entry)) for (const cidr of NAMED[entry]!) add(cidr)
    else add(entry)
  }
  // The last few answers kept: a server behind a proxy asks about the same few peers all day, and
  // BlockList.check builds a SocketAddress each time (5 % of a refusal's cost, profiled).
  const known = new Map<string, boolean>()
  return (address) => {
    const seen = known.get(address)
    if (seen !== undefined) return seen
    const plain = plainAddress(address)?.split('%')[0]
    const trusted = plain !== undefined && blocks.check(plain, isIPv4(plain) ? 'ipv4' : 'ipv6')
    if (known.size >= 64) known.clear()
    known.set(address, trusted)
    return trusted
  }
}

/**
 * The client behind trusted hops: the peer itself when it is not trusted, else the nearest
 * `X-Forwarded-For` entry not trusted (read from the right: each trusted hop vouches only for the
 * one before it), else the farthest one. An entry that is no address ends the walk: it is the
 * client as the last trusted hop named it.
 */
export function clientBehind(remote: string, forwardedFor: string | string[] | undefined, trusts: TrustPolicy): string {
  if (forwardedFor === undefined || !trusts(remote, 0)) return remote
  const list = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',')
  let address = remote
  let far = 0
  for (let i = list.length - 1; i >= 0; i--) {
    const hop = list[i]!.trim()
    if (hop === '') continue
    address = plainAddress(hop) ?? hop
    if (!trusts(hop, ++far)) break
  }
  return address
}

/** The trusted hops between the client and the peer: the `X-Forwarded-For` entries after {@link clientBehind}'s pick, then the peer. */
export function trustedChain(
  remote: string,
  forwardedFor: string | string[] | undefined,
  trusts: TrustPolicy,
): string[] {
  if (forwardedFor === undefined || !trusts(remote, 0)) return [remote]
  const list = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor)
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '')
  let i = list.length - 1
  while (i > 0 && trusts(list[i]!, list.length - i)) i--
  return [...list.slice(i).map((h) => plainAddress(h) ?? h), remote]
}

const PRIVATE = new BlockList()
for (const name of ['loopback', 'linklocal', 'uniquelocal']) {
  for (const cidr of NAMED[name]!) {
    const [net, bits] = cidr.split('/') as [string, string]
    PRIVATE.addSubnet(net, Number(bits), isIPv4(net) ? 'ipv4' : 'ipv6')
  }
}

/**
 * The client a proxy names when the gate was told the proxy's own address: `ip` is a loopback or
 * private peer (nginx on the same box, a load balancer) and its `X-Forwarded-For` names someone
 * else. `undefined` otherwise. Such a setup counts every visitor as the proxy: say so, once.
 */
export function proxiedClient(ip: string | undefined, forwardedFor: string | string[] | undefined): string | undefined {
  if (ip === undefined || forwardedFor === undefined) return undefined
  const text = Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor
  const last = text.slice(text.lastIndexOf(',') + 1).trim()
  // The usual case behind a trusted proxy: the gate was told the address the header names.
  if (last === ip) return undefined
  const named = plainAddress(last)
  const peer = plainAddress(ip)
  if (named === undefined || peer === undefined || named === peer) return undefined
  return PRIVATE.check(peer, isIPv4(peer) ? 'ipv4' : 'ipv6') ? named : undefined
}
