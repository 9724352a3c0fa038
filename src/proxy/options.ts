/**
 * The proxy's own options (`createProxy`): their type, and their check and defaults in one function
 * with no side effects, apart from the request handling (proxy.ts). A bad one throws
 * `ERR_AIRLOCK_OPTION` with a sentence naming it and the fix. The gate's options are passed on as
 * given (the gate checks them); `trustProxy` is the one policy the proxy, the decision service and
 * the dashboard share (src/base/client-address.ts).
 */
import type { IncomingMessage } from 'node:http'
import { trustPolicy, type TrustPolicy, type TrustProxyOption } from '../base/client-address.js'
import { optionError } from '../base/errors.js'
import { duration, type Duration, knownKeys, received } from '../base/validate.js'
import { GATE_OPTION_KEYS, type GateOptions } from '../gate/types.js'
import type { ProxyLog, ProxyLogOptions } from './log.js'
import { checkMetricsPath, checkedLog } from './mount.js'

/** Options of `createProxy`: where to forward, and the gate's options (all of them). */
export interface ProxyOptions extends GateOptions<IncomingMessage> {
  /** The origin: `http://127.0.0.1:8080` (its path, if any, prefixes every forwarded path). */
  target: string
  /** `false`: forward without the gate (to compare). Default `true`. */
  gated?: boolean
  /**
   * The proxies in front (nginx, a load balancer), whose `X-Forwarded-For` names the client (read
   * from the right, past each trusted hop) and whose `X-Forwarded-Proto` the scheme: their
   * addresses and CIDRs (`'10.0.0.0/8'`, `['10.0.0.5', '::1']`), the names `loopback`,
   * `linklocal`, `uniquelocal`; a number of hops as Express and Fastify take it (`1`: the peer is
   * your one proxy, and the client is the last `X-Forwarded-For` entry; `2`: a CDN, then your load
   * balancer; `0`: none); or `true` (every peer: only where nothing else reaches the port).
   * Default `false`: the client is the connection's peer. Either way the forwarding headers the
   * origin gets are the proxy's own; a client's are dropped.
   */
  trustProxy?: TrustProxyOption
  /** Serve the operator's dashboard at `path` (default `/airlock`) behind `token`. */
  dashboard?: { token: string; path?: string }
  /** Serve Prometheus metrics at this path (needs `prom-client`). Default: none. */
  metricsPath?: string
  /**
   * Largest `Content-Length` forwarded, in bytes, at least 1 (`413` above; a chunked body streams as
   * it comes, uncounted). Default 1 GiB (bodies stream; nothing is buffered whole).
   */
  bodyLimit?: number
  /**
   * How long the origin may take (ms, or a duration such as `'60s'`): to accept the connection, to
   * send its answer's headers, and between two chunks of a body. Past it the visitor gets a `504`
   * page that tries again by itself, and the slot is freed. Default 60 s (nginx's `proxy_read_timeout`).
   */
  upstreamTimeout?: Duration
  /** Forward the gate's pass cookie to the origin too. Default `false`: the origin never sees it. */
  keepPassCookie?: boolean
  /** The log: an access line per request and every 5xx the proxy makes itself. Default: none (`airlock proxy` logs at `info`). */
  log?: ProxyLogOptions | false
}

const PROXY_KEYS = [
  'target',
  'gated',
  'trustProxy',
  'dashboard',
  'metricsPath',
  'bodyLimit',
  'upstreamTimeout',
  'keepPassCookie',
  'log',
] as const satisfies readonly (keyof ProxyOptions)[]

/** The proxy's options, checked and settled; the gate's as given (createGate checks them). */
export interface ProxySettings {
  upstream: URL
  gated: boolean
  /** As given, for the dashboard the proxy serves. */
  trustProxy: TrustProxyOption
  trusts: TrustPolicy
  dashboard: { token: string; path?: string } | undefined
  metricsPath: string | undefined
  /** Bytes (at least 1). */
  bodyLimit: number
  /** `upstreamTimeout` in ms. */
  timeout: number
  keepPassCookie: boolean
  log: ProxyLog | undefined
  gateOptions: GateOptions<IncomingMessage>
}

/** Checks `createProxy`'s options (see {@link ProxyOptions}). Throws `ERR_AIRLOCK_OPTION` naming the first bad one. */
export function resolveProxyOptions(options: ProxyOptions): ProxySettings {
  if (options === null || typeof options !== 'object')
    optionError(`createProxy() needs an options object with a target, got ${received(options)}`)
  knownKeys('createProxy()', options, [...GATE_OPTION_KEYS, ...PROXY_KEYS])
  const {
    target,
    gated = true,
    trustProxy = false,
    dashboard,
    metricsPath,
    bodyLimit = 2 ** 30,
    upstreamTimeout,
    keepPassCookie = false,
    log: logOptions,
    ...gateOptions
  } = options
  let upstream: URL
  try {
    upstream = new URL(target)
  } catch {
    upstream = new URL('invalid:')
  }
  if (upstream.protocol !== 'http:' && upstream.protocol !== 'https:') {
    optionError(`target must be an http:// or https:// URL (http://127.0.0.1:8080), got ${received(target)}`)
  }
  if (typeof gated !== 'boolean') optionError(`gated must be a boolean, got ${received(gated)}`)
  if (typeof keepPassCookie !== 'boolean')
    optionError(`keepPassCookie must be a boolean, got ${received(keepPassCookie)}`)
  if (dashboard !== undefined && (typeof dashboard !== 'object' || dashboard === null))
    optionError(`dashboard must be { token, path? }, got ${received(dashboard)}`)
  checkMetricsPath(metricsPath)
  const bytes = bodyLimitOption(bodyLimit)
  const timeout = upstreamTimeout === undefined ? 60_000 : duration('upstreamTimeout', upstreamTimeout)
  const trusts = trustPolicy(trustProxy)
  const log = logOptions === undefined || logOptions === false ? undefined : checkedLog(logOptions)
  return {
    upstream,
    gated,
    trustProxy,
    trusts,
    dashboard,
    metricsPath,
    bodyLimit: bytes,
    timeout,
    keepPassCookie,
    log,
    gateOptions,
  }
}

/**
 * `bodyLimit`: bytes, at least 1. `0` is refused rather than given a meaning: it would answer `413`
 * to every body with a `Content-Length` and still stream a chunked one, so it refuses no body for sure.
 */
function bodyLimitOption(bodyLimit: unknown): number {
  if (bodyLimit === 0) {
    optionError(
      'bodyLimit must be a whole number of bytes, at least 1 (a request whose Content-Length is over it gets 413), got 0: ' +
        '0 would not refuse bodies (a chunked body has no Content-Length and is streamed); to refuse request bodies, refuse them at the origin',
    )
  }
  if (typeof bodyLimit !== 'number' || !Number.isSafeInteger(bodyLimit) || bodyLimit < 1) {
    optionError(
      `bodyLimit must be a whole number of bytes, at least 1 (a request whose Content-Length is over it gets 413), got ${received(bodyLimit)}`,
    )
  }
  return bodyLimit
}
