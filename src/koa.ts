/**
 * `airlock-shield/koa`: the Koa 3 middleware. It only translates the gate's decisions into
 * responses, and in request mode releases the slot once the response is over (sent, streamed to
 * its end, or the client gone after the route's work ended).
 * @packageDocumentation
 */
import type { ServerResponse } from 'node:http'
import type Koa from 'koa'
import { createGate, type Gate } from './gate/gate.js'
import { COMMAND_HEADER, cookieList, GateHandle, runCommand } from './gate/handle.js'
import type { AirlockHandle, GateDecision, GateOptions, RequestSlot, RequestView } from './gate/types.js'

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

/** `ctx.state.airlock`: the decision, and its release on Koa's response. */
class KoaHandle extends GateHandle<KoaContext> {
  constructor(
    gate: Gate<KoaContext>,
    decision: GateDecision,
    private readonly ctx: KoaContext,
  ) {
    super(gate, decision)
  }
  protected cookies(): string[] | undefined {
    return this.ctx.res.headersSent ? undefined : cookieList(this.ctx.res.getHeader('set-cookie'))
  }
  protected setCookies(cookies: string[]): void {
    this.ctx.res.setHeader('set-cookie', cookies)
  }
  protected secure(): boolean {
    return this.ctx.secure
  }
}

/** Calls `done` once the response is over: at once when it already is, else when it finishes or its connection closes. */
function whenOver(res: ServerResponse, done: () => void): void {
  if (res.writableFinished || res.destroyed) return done()
  const once = (): void => {
    res.off('finish', once)
    res.off('close', once)
    done()
  }
  res.once('finish', once)
  res.once('close', once)
}

/** The gate's answer, through Koa (its `Vary` joined to what the app already varies on). */
function answer(ctx: KoaContext, d: GateDecision & { response: NonNullable<GateDecision['response']> }): void {
  ctx.status = d.response.status
  for (const [k, v] of Object.entries(d.response.headers)) {
    if (k === 'vary') ctx.vary(v)
    else ctx.set(k, v)
  }
  // Koa sizes HEAD answers by the body it is given (the GET's, with its Content-Length) and sends none.
  ctx.body = d.response.status === 204 ? null : d.response.body
}

/**
 * Koa 3 middleware: `app.use(airlock({ limit: 20, store, secret }))`. The client's address and
 * HTTPS are Koa's (`ctx.ip`, `ctx.secure`: `app.proxy` decides whether forwarding headers count).
 * `ctx.state.airlock` is the route's view of the decision. Validates every option now (`ERR_AIRLOCK_OPTION`).
 */
export function airlock(options?: GateOptions<KoaContext>): KoaAirlock {
  const gate = createGate<KoaContext>(options)

  const middleware = async (ctx: KoaContext, next: () => Promise<unknown>): Promise<void> => {
    const decided = gate.decide(new KoaView(ctx))
    const d = decided instanceof Promise ? await decided : decided
    const res = ctx.res
    if (d.setCookie !== undefined) ctx.append('set-cookie', d.setCookie)
    if (d.response !== undefined) return answer(ctx, d as Parameters<typeof answer>[1])
    let handle: AirlockHandle | undefined
    if (d.kind !== 'bypass') ctx.state.airlock = handle = new KoaHandle(gate, d, ctx)
    if (d.kind === 'admit' && d.headers !== undefined) for (const [k, v] of Object.entries(d.headers)) ctx.append(k, v)
    const slot: RequestSlot | undefined = d.kind === 'admit' ? d.slot : undefined
    const t0 = slot === undefined && gate.measures(d) ? performance.now() : -1
    try {
      await next()
    } catch (err) {
      // Koa answers the error (a 5xx) after this: the route's work is over, and it failed.
      void slot?.release(true)
      if (t0 >= 0) gate.measure(performance.now() - t0, true, d)
      throw err
    }
    // `Airlock-Command: release` set by the route: acted on, never sent.
    const command = res.headersSent ? undefined : res.getHeader(COMMAND_HEADER)
    if (command !== undefined && handle !== undefined) {
      res.removeHeader(COMMAND_HEADER)
      runCommand(handle, command)
    }
    // The route's work is over, but a streamed body is still being made: the slot is free once it is sent (or the client left).
    if (slot !== undefined) whenOver(res, () => void slot.release(ctx.status >= 500))
    else if (t0 >= 0) whenOver(res, () => gate.measure(performance.now() - t0, ctx.status >= 500, d))
  }
  return Object.assign(middleware, { gate, close: () => gate.close() })
}

export default airlock
