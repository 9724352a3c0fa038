/**
 * `airlock-shield/koa`: the Koa 3 middleware. It only translates the gate's decisions into
 * responses, and in request mode releases the slot once the response is over (sent, streamed to
 * its end, or the client gone after the route's work ended).
 * @packageDocumentation
 */
import type { ServerResponse } from 'node:http'
import type Koa from 'koa'
import { passesThrough } from './gate/admission.js'
import { createGate, type Gate } from './gate/gate.js'
import { COMMAND_HEADER } from './gate/handle.js'
import type { AirlockHandle, GateOptions, GateResponse, RequestView } from './gate/types.js'
import { NodeAdmission } from './node/response.js'

declare module 'koa' {
  interface DefaultState {
    /** Set by the airlock middleware: the decision, and `release()` to end a pass or a request slot early. */
    airlock?: AirlockHandle
  }
}

/** The Koa context the middleware reads and answers through (Koa's `Context` fits). */
export type KoaContext = Koa.ParameterizedContext

/** The middleware, with its gate (for `state()`) and `close()` (stops the gate's timers, releases pooled request slots). */
export interface KoaAirlock {
  (ctx: KoaContext, next: () => Promise<unknown>): Promise<void>
  readonly gate: Gate<KoaContext>
  close(): Promise<void>
}

/**
 * The gate's view of a Koa request: `secure` and `ip` are Koa's getters (they read the forwarding
 * headers when `app.proxy` is on), read only when the gate needs them; a pass holder's decision
 * needs neither.
 */
class KoaView implements RequestView<KoaContext> {
  readonly method: string
  readonly url: string
  readonly headers: KoaContext['req']['headers']
  readonly routing = undefined
  constructor(readonly request: KoaContext) {
    this.method = request.method
    this.url = request.originalUrl
    this.headers = request.req.headers
  }
  get secure(): boolean {
    return this.request.secure
  }
  get ip(): string {
    return this.request.ip
  }
}

/**
 * Calls `done` once the response is over: at once when it already is, else when it finishes or its
 * connection closes. `sent`: the response was sent whole (not cut off by the client leaving).
 */
function whenOver(res: ServerResponse, done: (sent: boolean) => void): void {
  if (res.writableFinished || res.destroyed) return done(res.writableFinished)
  const once = (): void => {
    res.off('finish', once)
    res.off('close', once)
    done(res.writableFinished)
  }
  res.once('finish', once)
  res.once('close', once)
}

/** The gate's answer, through Koa (its `Vary` joined to what the app already varies on). */
function answer(ctx: KoaContext, response: GateResponse): void {
  ctx.status = response.status
  for (const [k, v] of Object.entries(response.headers)) {
    if (k === 'vary') ctx.vary(v)
    else ctx.set(k, v)
  }
  // Koa sizes HEAD answers by the body it is given (the GET's, with its Content-Length) and sends none.
  ctx.body = response.status === 204 ? null : response.body
}

/**
 * Koa 3 middleware: `app.use(airlock({ limit: 20, store, secret }))`. The client's address and
 * HTTPS are Koa's (`ctx.ip`, `ctx.secure`: `app.proxy` decides whether forwarding headers count).
 * `ctx.state.airlock` is the route's view of the decision. Validates every option now (`ERR_AIRLOCK_OPTION`).
 */
export function airlock(options?: GateOptions<KoaContext>): KoaAirlock {
  const gate = createGate<KoaContext>(options)

  const middleware = async (ctx: KoaContext, next: () => Promise<unknown>): Promise<void> => {
    const view = new KoaView(ctx)
    const decided = gate.decide(view)
    const d = decided instanceof Promise ? await decided : decided
    if (passesThrough(d)) return void (await next())
    const res = ctx.res
    const admission = new NodeAdmission(gate, d, res, view)
    const gateAnswer = admission.open()
    if (gateAnswer !== undefined) return answer(ctx, gateAnswer)
    if (d.kind !== 'bypass') ctx.state.airlock = admission
    try {
      await next()
    } catch (err) {
      // Koa answers the error (a 5xx) after this: the route's work is over, and it failed.
      admission.failed()
      throw err
    }
    // `Airlock-Command: release` set by the route: acted on, never sent.
    const command = res.headersSent || d.kind === 'bypass' ? undefined : res.getHeader(COMMAND_HEADER)
    if (command !== undefined) {
      res.removeHeader(COMMAND_HEADER)
      admission.command(command)
    }
    // The route's work is over, but a streamed body is still being made: the slot is free once it is
    // sent (or the client left: then nothing is measured).
    if (admission.watches) whenOver(res, (sent) => admission.ended(sent ? ctx.status : undefined))
  }
  return Object.assign(middleware, { gate, close: () => gate.close() })
}

export default airlock
