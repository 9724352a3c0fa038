import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  createGate,
  type AirlockControl,
  type Gate,
  type GateDecision,
  type GateOptions,
  type RequestSlot,
} from './core/gate.js'

/** The parts of an Express 4/5 request the middleware reads (express's `Request` fits). */
export interface ExpressLikeRequest extends IncomingMessage {
  originalUrl?: string
  /** Express: HTTPS as seen through the `trust proxy` setting. */
  secure?: boolean
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
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      /** Set by the airlock middleware: the decision, and `release()` to end a pass or a request slot early. */
      airlock?: AirlockControl
    }
  }
}

function isSecure(req: ExpressLikeRequest): boolean {
  if (typeof req.secure === 'boolean') return req.secure
  return Boolean((req.socket as { encrypted?: boolean } | undefined)?.encrypted)
}

function control<Req extends ExpressLikeRequest>(gate: Gate<Req>, d: GateDecision, req: Req, res: ExpressLikeResponse): AirlockControl {
  return {
    decision: d,
    async release() {
      if (d.kind === 'admit' && d.slot) return d.slot.release()
      if (d.kind !== 'admit' && d.kind !== 'pass') return false
      if (!res.headersSent) {
        const prefix = `${gate.cookieName}=`
        const current = res.getHeader('set-cookie')
        const others = (Array.isArray(current) ? current : current === undefined ? [] : [String(current)]).filter(
          (c) => !c.startsWith(prefix),
        )
        res.setHeader('set-cookie', [...others, gate.clearCookie(isSecure(req))])
      }
      return gate.release(d)
    },
  }
}

function appendCookie(res: ServerResponse, cookie: string): void {
  const current = res.getHeader('set-cookie')
  if (current === undefined) res.setHeader('set-cookie', cookie)
  else res.setHeader('set-cookie', [...(Array.isArray(current) ? current : [String(current)]), cookie])
}

/**
 * Request mode: release when the handler's work is over, i.e. when it ends the response (`res.end`),
 * even if the client left before; `finish` as a second signal. Never on the client's `close`: the
 * backend may still be busy with the request. The slot's `ttl` is the last resort.
 */
function releaseWhenDone(res: ServerResponse, slot: RequestSlot): void {
  const end = res.end
  res.end = function (this: ServerResponse, ...args: unknown[]) {
    res.end = end
    void slot.release()
    return (end as (...a: unknown[]) => ServerResponse).apply(this, args)
  } as ServerResponse['end']
  res.once('finish', () => void slot.release())
}

/**
 * Express 4/5 middleware: `app.use(airlock({ limit: 20, store, secret }))`. Mount it on a router
 * (`router.use(airlock({ name: 'checkout', limit: 5 }))`) to give some routes their own gate.
 */
export function airlock<Req extends ExpressLikeRequest = ExpressLikeRequest>(options?: GateOptions<Req>): AirlockMiddleware<Req> {
  const gate = createGate<Req>(options)

  const apply = (req: Req, res: ExpressLikeResponse, next: (err?: unknown) => void, d: GateDecision): void => {
    if (d.kind !== 'bypass') {
      if (res.locals === undefined) res.locals = {}
      res.locals.airlock = control(gate, d, req, res)
    }
    if (d.setCookie !== undefined) appendCookie(res, d.setCookie)
    if (d.response !== undefined) {
      res.statusCode = d.response.status
      for (const [k, v] of Object.entries(d.response.headers)) res.setHeader(k, v)
      res.end(d.response.body)
      return
    }
    if (d.kind === 'admit' && d.slot !== undefined) releaseWhenDone(res, d.slot)
    next()
  }

  const middleware = (req: Req, res: ExpressLikeResponse, next: (err?: unknown) => void): void => {
    const d = gate.decide({
      method: req.method ?? 'GET',
      url: req.originalUrl ?? req.url ?? '/',
      headers: req.headers,
      secure: isSecure(req),
      request: req,
    })
    if (d instanceof Promise) d.then((decision) => apply(req, res, next, decision), next)
    else apply(req, res, next, d)
  }
  return Object.assign(middleware, { gate, close: () => gate.close() })
}

export default airlock
