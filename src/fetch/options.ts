/**
 * The options the Web-standard adapters (`airlock-shield/fetch`, `airlock-shield/hono`) add to the
 * gate's: a `Request` carries no client address and no trust-proxy setting, so they are given here.
 */
import { optionError } from '../base/errors.js'
import { boolean, knownKeys, received } from '../base/validate.js'
import { GATE_OPTION_KEYS, type GateOptions } from '../gate/types.js'

/** What a Web-standard adapter adds to {@link GateOptions}. */
export interface WebOptions<Args extends unknown[]> {
  /**
   * The client's address (for `clientShare`): e.g. Bun's `(request, server) => server.requestIP(request)?.address`,
   * Deno's `(request, info) => info.remoteAddr.hostname`. Default: the first `X-Forwarded-For`
   * address when `trustProxy`, else the socket's address on `@hono/node-server`, else none: then no
   * client share is counted for the request (it still counts against the limit), unless `clientKey`
   * names the client.
   */
  clientAddress?(...args: Args): string | undefined
  /**
   * Believe the client's `X-Forwarded-For` (its first address: the client) and `X-Forwarded-Proto`
   * (`https`: the pass cookie gets `Secure`). Only behind a proxy you run, which sets them. Default
   * `false`: the address is the socket's, HTTPS is the request URL's scheme.
   */
  trustProxy?: boolean
}

export const WEB_OPTION_KEYS: readonly string[] = [...GATE_OPTION_KEYS, 'clientAddress', 'trustProxy']

/** Checks the adapter's own options and hands back the gate's. Throws `ERR_AIRLOCK_OPTION`. */
export function webOptions<Req, Args extends unknown[]>(
  what: string,
  options: (GateOptions<Req> & WebOptions<Args>) | undefined,
): {
  gateOptions: GateOptions<Req>
  clientAddress: ((...args: Args) => string | undefined) | undefined
  trustProxy: boolean
} {
  if (options === undefined) return { gateOptions: {}, clientAddress: undefined, trustProxy: false }
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    optionError(`${what} options must be an object, got ${received(options)}`)
  knownKeys(what, options, WEB_OPTION_KEYS)
  const { clientAddress, trustProxy = false, ...gateOptions } = options
  if (clientAddress !== undefined && typeof clientAddress !== 'function') {
    optionError(
      `clientAddress must be a function of the request returning the client's address, e.g. (request, server) => server.requestIP(request)?.address, got ${received(clientAddress)}`,
    )
  }
  return { gateOptions, clientAddress, trustProxy: boolean('trustProxy', trustProxy) }
}
