/**
 * `airlock-shield/hono`: the Hono 4 middleware, on any runtime Hono runs on (tested on Node with
 * `@hono/node-server`). It only translates, through the Web-standard adapter (src/fetch/web.ts).
 * @packageDocumentation
 */
import type { Context, MiddlewareHandler } from 'hono'
import { createGate, type Gate } from './gate/gate.js'
import type { AirlockHandle, GateOptions } from './gate/types.js'
import { check, defaultAddress, nodeHeaders } from './fetch/web.js'
import { webOptions, type WebOptions } from './fetch/options.js'

/** The context variable the middleware sets: `c.get('airlock')` (or `c.var.airlock`). */
export interface AirlockVariables {
  /**
   * This request's decision, and `release()` to end a pass or a request slot early (on a bypassed
   * request: no decision, nothing to release). Unset on routes the middleware does not run for.
   */
  airlock: AirlockHandle
}

/**
 * Options of {@link airlock}: the gate's options (`skip`, `nonce`, `busyPage` and `clientKey` are
 * given Hono's `Context`), plus `clientAddress(c)` and `trustProxy`. The default address is
 * `@hono/node-server`'s socket (`c.env.incoming`); on Bun or Deno give `clientAddress`, e.g. with
 * Hono's `getConnInfo(c).remote.address`.
 */
export interface HonoAirlockOptions extends GateOptions<Context>, WebOptions<[c: Context]> {}

/** The middleware, with its gate (for `state()`) and `close()` (stops the gate's timers, releases pooled request slots). */
export type HonoAirlock = MiddlewareHandler<{ Variables: AirlockVariables }> & {
  readonly gate: Gate<Context>
  close(): Promise<void>
}

/**
 * Hono middleware: `app.use(airlock({ limit: 20, store, secret }))`; routes declared before it are
 * not gated. On a path (`app.use('/checkout/*', airlock({ name: 'checkout', limit: 5 }))`) for a
 * gate of its own. Validates every option now (`ERR_AIRLOCK_OPTION`).
 */
export function airlock(options?: HonoAirlockOptions): HonoAirlock {
  const { gateOptions, clientAddress, trustProxy } = webOptions('airlock (Hono)', options)
  const gate = createGate<Context>(gateOptions)
  const middleware: MiddlewareHandler<{ Variables: AirlockVariables }> = async (c, next) => {
    const request = c.req.raw
    const ip = clientAddress === undefined ? defaultAddress(request, c.env, trustProxy) : clientAddress(c)
    const decided = check(gate, request, c as Context, ip, trustProxy, nodeHeaders(c.env))
    const answer = decided instanceof Promise ? await decided : decided
    if (answer.response !== undefined) return answer.response
    c.set('airlock', answer.airlock)
    try {
      // Hono turns a route's error into c.res (its onError): a 5xx here, not a throw.
      await next()
    } catch (err) {
      answer.fail()
      throw err
    }
    const response = answer.finish(c.res)
    if (response !== c.res) {
      // Replaced, not merged: Hono's setter would copy the old response's headers (Airlock-Command, its cookies) over.
      c.res = undefined as unknown as Response
      c.res = response
    }
    return undefined
  }
  return Object.assign(middleware, { gate, close: () => gate.close() })
}

export default airlock
