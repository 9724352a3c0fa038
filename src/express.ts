/**
 * `airlock-shield/express`: the Express 4/5 middleware. It only translates the gate's decisions
 * into responses, and in request mode releases the slot once the handler's work is over.
 */
import { IncomingMessage, ServerResponse } from 'node:http'
import { AirlockError } from './base/errors.js'
import { varyWith } from './base/http.js'
import type { RoutingRules } from './gate/types.js'
import { createGate, type Gate } from './gate/gate.js'
import { COMMAND_HEADER, cookieList, GateHandle, holdWhileOpen, runCommand } from './gate/handle.js'
import type { AirlockHandle, GateDecision, GateOptions, RequestSlot, RequestView } from './gate/types.js'
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

/** `res.locals.airlock`: the decision, and its release on Express's response. */
class ExpressHandle<Req extends ExpressLikeRequest> extends GateHandle<Req> {
  constructor(
    gate: Gate<Req>,
    decision: GateDecision,
    private readonly view: ExpressView<Req>,
    private readonly res: ExpressLikeResponse,
  ) {
    super(gate, decision)
  }
  protected cookies(): string[] | undefined {
    return this.res.headersSent ? undefined : cookieList(this.res.getHeader('set-cookie'))
  }
  protected setCookies(cookies: string[]): void {
    this.res.setHeader('set-cookie', cookies)
  }
  protected secure(): boolean {
    return this.view.secure
  }
}

function appendCookie(res: ServerResponse, cookie: string): void {
  const current = res.getHeader('set-cookie')
  if (current === undefined) res.setHeader('set-cookie', cookie)
  else res.setHeader('set-cookie', [...(Array.isArray(current) ? current : [String(current)]), cookie])
}

/** Adds a header, after any value already set (a `Link` list is comma-separated). */
function appendHeader(res: ServerResponse, name: string, value: string): void {
  const current = res.getHeader(name)
  res.setHeader(name, current === undefined ? value : `${String(current)}, ${value}`)
}

/**
 * Request mode: release when the handler's work is over, i.e. when it ends the response (`res.end`),
 * even if the client left before; `finish` as a second signal. Never on the client's `close`: the
 * backend may still be busy with the request. The slot's `ttl` is the last resort.
 */
function releaseWhenDone(req: IncomingMessage, res: ServerResponse, slot: RequestSlot): void {
  // An upgrade (express-ws) is a request that lasts: its slot is kept alive until the socket closes.
  if (req.headers.upgrade !== undefined) holdWhileOpen(req.socket, slot)
  const end = res.end
  res.end = function (this: ServerResponse, ...args: unknown[]) {
    res.end = end
    void slot.release(res.statusCode >= 500)
    return (end as (...a: unknown[]) => ServerResponse).apply(this, args)
  } as ServerResponse['end']
  res.once('finish', () => void slot.release())
}

/** What an `Airlock-Command` acts on: the request's handle. */
type CommandRunner = AirlockHandle

/**
 * A gated response's runner, until its head is written (see {@link watchCommand}): a property of
 * the response (a `WeakMap` entry per response cost more), named by a registered symbol so that two
 * copies of the package in one process (its ESM and CommonJS builds) share it with the one hook.
 */
const COMMAND = Symbol.for('airlock-shield.command')
const HOOKED = Symbol.for('airlock-shield.command-hook')
type Commanded = ServerResponse & { [COMMAND]?: CommandRunner | undefined }

/** Takes `Airlock-Command` out of the response's headers and out of `writeHead`'s own (an object, or a flat [name, value, ...] list). */
function takeCommand(res: ServerResponse, args: unknown[], run: CommandRunner): void {
  const given = args.find((a, i) => i > 0 && typeof a === 'object' && a !== null) as
    | Record<string, string>
    | string[]
    | undefined
  let value = res.getHeader(COMMAND_HEADER)
  if (value !== undefined) res.removeHeader(COMMAND_HEADER)
  if (Array.isArray(given)) {
    const at = given.findIndex((v, i) => i % 2 === 0 && String(v).toLowerCase() === COMMAND_HEADER)
    if (at >= 0) value = given.splice(at, 2)[1]
  } else if (given !== undefined) {
    for (const k of Object.keys(given)) {
      if (k.toLowerCase() !== COMMAND_HEADER) continue
      value = given[k]
      delete given[k]
    }
  }
  if (value !== undefined) runCommand(run, value)
}

/**
 * Where the shared hook goes: the last prototype of `res` before Node's `ServerResponse.prototype`
 * (Express's response object, the prototype of every app's `app.response`); `undefined` for a plain
 * Node response.
 */
function hookTarget(res: ServerResponse): object | undefined {
  let p = Object.getPrototypeOf(res) as object | null
  if (p === ServerResponse.prototype) return undefined
  while (p !== null) {
    const up = Object.getPrototypeOf(p) as object | null
    if (up === ServerResponse.prototype) return p
    p = up
  }
  return undefined
}

/** A `writeHead` on `target` that acts on the response's runner, then calls the one it hides (read at call time). */
function installHook(target: object): void {
  const own = Object.hasOwn(target, 'writeHead') ? (target as ServerResponse).writeHead : undefined
  Object.defineProperty(target, 'writeHead', {
    configurable: true,
    writable: true,
    value: function writeHead(this: ServerResponse, ...args: unknown[]) {
      const run = (this as Commanded)[COMMAND]
      if (run !== undefined) {
        ;(this as Commanded)[COMMAND] = undefined
        takeCommand(this, args, run)
      }
      const inner = own ?? (Object.getPrototypeOf(target) as ServerResponse).writeHead
      return (inner as (...a: unknown[]) => ServerResponse).apply(this, args)
    },
  })
  Object.defineProperty(target, HOOKED, { value: true })
}

/**
 * `Airlock-Command: release` set by a route: acted on (`run`) and removed just before the headers
 * are written (an explicit `writeHead` or the implicit one of the first write), never sent.
 *
 * On Express the `writeHead` that reads it is installed once, on Express's response object (every
 * Express response passes through it; those without a runner pay one property read), and each
 * gated response only registers its runner: an own `writeHead` assigned to every response (as
 * `on-headers` does) cost the pass holders' requests about 15 % of bare Express's server CPU
 * (bench/overhead.ts). A response without Express's prototype gets its own `writeHead`.
 */
function watchCommand(res: ServerResponse, run: CommandRunner): void {
  const target = hookTarget(res)
  if (target !== undefined) {
    if (!Object.hasOwn(target, HOOKED)) installHook(target)
    ;(res as Commanded)[COMMAND] = run
    return
  }
  const writeHead = res.writeHead
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    res.writeHead = writeHead
    takeCommand(this, args, run)
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args)
  } as ServerResponse['writeHead']
}

/**
 * Express 4/5 middleware: `app.use(airlock({ limit: 20, store, secret }))`. Mount it on a router
 * (`router.use(airlock({ name: 'checkout', limit: 5 }))`) to give some routes their own gate.
 */
export function airlock<Req extends ExpressLikeRequest = ExpressLikeRequest>(
  options?: GateOptions<Req>,
): AirlockMiddleware<Req> {
  if (options instanceof IncomingMessage) {
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
    const req = view.request
    if (d.kind !== 'bypass') {
      if (res.locals === undefined) res.locals = {}
      const airlock = new ExpressHandle(gate, d, view, res)
      res.locals.airlock = airlock
      if (d.response === undefined) watchCommand(res, airlock)
    }
    if (d.setCookie !== undefined) appendCookie(res, d.setCookie)
    if (d.kind === 'admit' && d.headers !== undefined) {
      for (const [k, v] of Object.entries(d.headers)) appendHeader(res, k, v)
    }
    if (d.response !== undefined) {
      res.statusCode = d.response.status
      // Vary: joined to what the application already said it varies on (Origin, ...), not replaced.
      for (const [k, v] of Object.entries(d.response.headers))
        res.setHeader(k, k === 'vary' ? varyWith(res.getHeader('vary'), v) : v)
      res.end(d.response.body)
      return
    }
    if (d.kind === 'admit' && d.slot !== undefined) releaseWhenDone(req, res, d.slot)
    else if (gate.measures(d)) {
      // The adaptive limit learns from the response time of admitted requests.
      const t0 = performance.now()
      ;(res as unknown as ServerResponse).once('finish', () =>
        gate.measure(performance.now() - t0, res.statusCode >= 500, d),
      )
    }
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
