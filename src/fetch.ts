/**
 * `airlock-shield/fetch`: the gate for any Web-standard handler, `(request: Request) => Response`:
 * `Bun.serve`, `Deno.serve`, `@hono/node-server`, Cloudflare-style `export default { fetch }`, or a
 * middleware of your own. It only translates the gate's decisions (src/fetch/web.ts): Web APIs on
 * the adapter's side, no peer dependency.
 * @packageDocumentation
 */
import { createGate, type Gate } from './gate/gate.js'
import { NO_HANDLE } from './gate/handle.js'
import type { AirlockHandle, GateOptions } from './gate/types.js'
import { check, defaultAddress, nodeHeaders, type WebAnswer } from './fetch/web.js'
import { webOptions, type WebOptions } from './fetch/options.js'

export { WebAnswer } from './fetch/web.js'
export type { WebOptions } from './fetch/options.js'

/** A Web-standard handler: the request, and whatever else the server passes (Bun's server, Deno's info, `@hono/node-server`'s `{ incoming, outgoing }`). */
export type FetchHandler<Context extends unknown[] = unknown[]> = (
  request: Request,
  ...context: Context
) => Response | Promise<Response>

/**
 * Options of {@link airlock}: the gate's options (`skip`, `nonce`, `busyPage` and `clientKey` are
 * given the `Request`), plus `clientAddress` and `trustProxy`.
 */
export interface FetchAirlockOptions
  extends GateOptions<Request>,
    WebOptions<[request: Request, ...context: unknown[]]> {}

/** One request's decision (see {@link FetchAirlock.check}). */
export type FetchAnswer = WebAnswer<Request>

/** The gate on fetch handlers: {@link wrap} a handler, or {@link check} requests in a middleware of your own. */
export interface FetchAirlock {
  readonly gate: Gate<Request>
  /**
   * Decides one request (pass the server's other handler arguments too: the default client address
   * reads `@hono/node-server`'s). `await` it: synchronous for pass holders, a promise otherwise.
   * Send `answer.response` when set (busy, waiting, challenge, confirm: the route must not run);
   * else run the route and send `answer.finish(routeResponse)` (or call `answer.fail()` if it threw).
   */
  check(request: Request, ...context: unknown[]): FetchAnswer | Promise<FetchAnswer>
  /**
   * `handler`, gated: answers for the gate when it answers, else calls `handler` and finishes its
   * response (the pass cookie; in request mode the slot released when the body has been sent).
   * Inside, {@link handle}`(request)` is the route's view of the decision.
   */
  wrap<Context extends unknown[]>(
    handler: FetchHandler<Context>,
  ): (request: Request, ...context: Context) => Response | Promise<Response>
  /** Inside a wrapped handler: this request's decision, and `release()` (logout, checkout done). */
  handle(request: Request): AirlockHandle
  /** Stops the gate's timers and releases pooled request slots. */
  close(): Promise<void>
}

/**
 * The gate for fetch handlers: `export default { fetch: airlock({ limit: 20, store, secret }).wrap(app) }`.
 * Validates every option now (`ERR_AIRLOCK_OPTION`).
 */
export function airlock(options?: FetchAirlockOptions): FetchAirlock {
  const { gateOptions, clientAddress, trustProxy } = webOptions('airlock (fetch)', options)
  const gate = createGate<Request>(gateOptions)
  // The answer of a request being handled, for handle(request): a property of the request, not a
  // WeakMap entry (a WeakMap of every request in flight cost the garbage collector on each request).
  const ANSWER = Symbol('airlock-shield.answer')
  type Answered = Request & { [ANSWER]?: FetchAnswer }

  const decide = (request: Request, context: unknown[]): FetchAnswer | Promise<FetchAnswer> => {
    const ip =
      clientAddress === undefined ? defaultAddress(request, context[0], trustProxy) : clientAddress(request, ...context)
    return check(gate, request, request, ip, trustProxy, nodeHeaders(context[0]))
  }

  const run = <Context extends unknown[]>(
    handler: FetchHandler<Context>,
    answer: FetchAnswer,
    request: Request,
    context: Context,
  ): Response | Promise<Response> => {
    if (answer.response !== undefined) return answer.response
    if (answer.decision.kind !== 'bypass') (request as Answered)[ANSWER] = answer
    let response: Response | Promise<Response>
    try {
      response = handler(request, ...context)
    } catch (err) {
      answer.fail()
      throw err
    }
    if (!(response instanceof Promise)) return answer.finish(response)
    return response.then(
      (r) => answer.finish(r),
      (err: unknown) => {
        answer.fail()
        throw err
      },
    )
  }

  return {
    gate,
    check: (request, ...context) => decide(request, context),
    wrap:
      <Context extends unknown[]>(handler: FetchHandler<Context>) =>
      (request: Request, ...context: Context) => {
        const answer = decide(request, context)
        return answer instanceof Promise
          ? answer.then((a) => run(handler, a, request, context))
          : run(handler, answer, request, context)
      },
    handle: (request) => (request as Answered)[ANSWER]?.airlock ?? NO_HANDLE,
    close: () => gate.close(),
  }
}

export default airlock
