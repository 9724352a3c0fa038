/**
 * `airlock-shield/express`: the Express 4/5 middleware. It only translates the gate's decisions
 * into responses, and in request mode releases the slot once the handler's work is over.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { AirlockError } from './base/errors.js'
import type { RoutingRules } from './gate/types.js'
import { passesThrough } from './gate/admission.js'
import { createGate, type Gate } from './gate/gate.js'
import type { AirlockHandle, GateDecision, GateOptions, RequestView } from './gate/types.js'
import { endWhenDone, isNodeRequest, NodeAdmission, sendAnswer, watchCommand } from './node/response.js'
import { createDashboard, type Dashboard, type DashboardOptions } from './dashboard/server.js'

/** The parts of an Express 4/5 request the middleware reads (express's `Request` fits). */
export interface ExpressLikeRequest extends IncomingMessage {
  originalUrl?: string
  /** Express: HTTPS as seen through the `trust proxy` setting. */
  secure?: boolean
  /** Express: the client's address as seen through the `trust proxy` setting. */
  ip?: string
  /** Express: the application, for its `case sensitive routing` setting. */
  app?: { get?(setting: string): unknown }
}

/** The parts of an Express 4/5 response the middleware uses (express's `Response` fits). */
export interface ExpressLikeResponse extends ServerResponse {
  locals?: Record<string, unknown>
}

/** The middleware, with its gate (for `state()`) and `close()` (stops the gate's timers, releases pooled request slots). */
export interface AirlockMiddleware<Req extends ExpressLikeRequest = ExpressLikeRequest> {
  (req: Req, res: ExpressLikeResponse, next: (err?: unknown) => void): void
  readonly gate: Gate<Req>
  close(): Promise<void>
}

declare global {
  // A namespace, not a module: this merges into the global `Express.Locals` that @types/express declares.
  namespace Express {
    interface Locals {
      /** Set by the airlock middleware: the decision, and `release()` to end a pass or a request slot early. */
      airlock?: AirlockHandle
    }
  }
}

function isSecure(req: ExpressLikeRequest): boolean {
  if (typeof req.secure === 'boolean') return req.secure
  return Boolean((req.socket as { encrypted?: boolean } | undefined)?.encrypted)
}

const FOLD_CASE: RoutingRules = { foldCase: true }

/**
 * The gate's view of an Express request. `secure`, `ip` and `routing` are read when the gate needs
 * them: Express's `req.secure` and `req.ip` parse the forwarding headers on each read, and a pass
 * holder's decision needs none of them (reading them cost it about 3 µs a request).
 */
class ExpressView<Req extends ExpressLikeRequest> implements RequestView<Req> {
  readonly method: string
  readonly url: string
  readonly headers: Req['headers']
  #secure: boolean | undefined
  constructor(readonly request: Req) {
    this.method = request.method ?? 'GET'
    this.url = request.originalUrl ?? request.url ?? '/'
    this.headers = request.headers
  }
  get secure(): boolean {
    return (this.#secure ??= isSecure(this.request))
  }
  get ip(): string | undefined {
    return this.request.ip ?? this.request.socket?.remoteAddress
  }
  /** Express routes without regard to case unless told otherwise (and, unless `strict`, ignores a trailing slash, which the bypass rules always allow for). */
  get routing(): RoutingRules | undefined {
    return this.request.app?.get?.('case sensitive routing') === true ? undefined : FOLD_CASE
  }
}

/**
 * Express 4/5 middleware: `app.use(airlock({ limit: 20, store, secret }))`. Mount it on a router
 * (`router.use(airlock({ name: 'checkout', limit: 5 }))`) to give some routes their own gate.
 */
export function airlock<Req extends ExpressLikeRequest = ExpressLikeRequest>(
  options?: GateOptions<Req>,
): AirlockMiddleware<Req> {
  if (isNodeRequest(options)) {
    // `app.use(airlock)`: Express calls the factory with (req, res, next) on every request.
    const err = new AirlockError(
      'ERR_AIRLOCK_OPTION',
      'airlock is a middleware factory: write app.use(airlock({ limit: 20, ... })), not app.use(airlock)',
    )
    // biome-ignore lint/complexity/noArguments: the third argument exists only in this misuse; the public signature stays (options?)
    const next: unknown = arguments[2]
    if (typeof next !== 'function') throw err
    next(err)
    return undefined as never
  }
  const gate = createGate<Req>(options)

  const apply = (
    view: ExpressView<Req>,
    res: ExpressLikeResponse,
    next: (err?: unknown) => void,
    d: GateDecision,
  ): void => {
    // Not gated and nothing to add: on to the route, with nothing made.
    if (passesThrough(d)) return next()
    const admission = new NodeAdmission(gate, d, res, view)
    if (d.kind !== 'bypass') {
      if (res.locals === undefined) res.locals = {}
      res.locals.airlock = admission
    }
    const answer = admission.open()
    if (answer !== undefined) return sendAnswer(res, answer)
    if (d.kind !== 'bypass') watchCommand(res, admission)
    if (admission.watches) endWhenDone(view.request, res, admission)
    next()
  }

  const middleware = (req: Req, res: ExpressLikeResponse, next: (err?: unknown) => void): void => {
    const view = new ExpressView(req)
    const d = gate.decide(view)
    if (d instanceof Promise) d.then((decision) => apply(view, res, next, decision), next)
    else apply(view, res, next, d)
  }
  return Object.assign(middleware, { gate, close: () => gate.close() })
}

/**
 * The operator's dashboard as Express middleware: `app.use('/airlock', airlockDashboard({ token, store, names }))`.
 * Mount it before the gate (`app.use(airlock(...))`) so the operator is never turned away in a hug.
 * The middleware has `close()` (stops sampling) and `dashboard`.
 */
export function airlockDashboard(
  options: DashboardOptions,
): ((req: IncomingMessage, res: ServerResponse) => void) & { dashboard: Dashboard; close(): void } {
  const dashboard = createDashboard(options)
  return Object.assign((req: IncomingMessage, res: ServerResponse) => dashboard.handle(req, res), {
    dashboard,
    close: () => dashboard.close(),
  })
}

export default airlock

/** `AirlockControl` (deprecated, goes in 0.3): the old name of {@link AirlockHandle}, kept here, by the request it names; the root entry no longer has it (beside `airlockControl()`, the live control). */
export type { AirlockControl, AirlockHandle } from './gate/types.js'
