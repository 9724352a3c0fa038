/**
 * One request's admission: the framework-free object every adapter drives (ARCHITECTURE.md, "A new
 * adapter"). An adapter makes the gate's {@link RequestView}, asks `gate.decide(view)`, wraps the
 * decision in its subclass of {@link Admission} (four small hooks on its own response), and then
 * only calls it from its own hooks: {@link Admission.open} before the route, {@link
 * Admission.command} when the route set `Airlock-Command`, {@link Admission.ended} when the response
 * is over, {@link Admission.failed} when the route threw. The duties every adapter used to carry
 * (cookies, admit headers, the measure for the adaptive limit, failed = status ≥ 500, release once)
 * live here, once.
 */
import { holdsPass, type Gate } from './gate.js'
import { runCommand } from './handle.js'
import type { AirlockHandle, GateDecision, GateResponse, RequestSlot } from './types.js'

/**
 * Whether `decision` needs no admission: not gated, no cookie to set, no answer of the gate's own.
 * An adapter then runs the route with nothing made (the common case of an ungated asset).
 */
export function passesThrough(decision: GateDecision): boolean {
  return decision.kind === 'bypass' && decision.setCookie === undefined && decision.response === undefined
}

/**
 * The route's view of a decision (`reply.airlock`, `res.locals.airlock`, `ctx.state.airlock`, ...)
 * and the adapter's driver of it. One object a request.
 */
export abstract class Admission<Req = unknown> implements AirlockHandle {
  /** When the route started (performance.now()), while the adaptive limit waits for its time; -1: nothing to measure. */
  #since = -1
  /** {@link ended} or {@link failed} was called. */
  #over = false

  constructor(
    readonly gate: Gate<Req>,
    readonly decision: GateDecision,
  ) {}

  // The adapter's hooks: its response.

  /**
   * Adds a header to the response: `set-cookie` as one more cookie; another name joined to a value
   * already there with `, ` (a `Link` list).
   */
  protected abstract addHeader(name: string, value: string): void
  /** The response's current `Set-Cookie` values; `undefined` once its headers are sent. */
  protected abstract cookies(): string[] | undefined
  /** Replaces the response's `Set-Cookie` values. */
  protected abstract setCookies(cookies: string[]): void
  /** Whether the request came over HTTPS (read only when a cookie is cleared). */
  protected abstract secure(): boolean

  // What the adapter calls.

  /**
   * Before the route: puts the decision's cookie on the response and returns the gate's own answer
   * to send instead of the route (busy `503`, queued `202`, the challenge, the confirm `204`, ...);
   * or `undefined`: the admit headers are on the response too, and the route runs now.
   */
  open(): GateResponse | undefined {
    const d = this.decision
    if (d.setCookie !== undefined) this.addHeader('set-cookie', d.setCookie)
    if (d.response !== undefined) return d.response
    if (d.kind === 'admit') {
      const headers = d.headers
      if (headers !== undefined) for (const k in headers) this.addHeader(k, headers[k]!)
      if (d.slot !== undefined) return undefined
    }
    if (this.gate.measures(d)) this.#since = performance.now()
    return undefined
  }

  /** The slot this request holds until its response is over (request mode; a local-quota admission in session mode). */
  get slot(): RequestSlot | undefined {
    const d = this.decision
    return d.kind === 'admit' ? d.slot : undefined
  }

  /** Whether the adapter must tell {@link ended}: a slot to free, or the route's time to measure. */
  get watches(): boolean {
    return this.#since >= 0 || this.slot !== undefined
  }

  /** Acts on an `Airlock-Command` value the route set (`release`); the adapter never sends the header. `false`: a value it does not know. */
  command(value: string | number | string[] | undefined): boolean {
    return runCommand(this, value)
  }

  /**
   * The route's response is over. `status`: what it answered (failed: ≥ 500); `undefined`: the
   * client went away before it ended (the slot freed, nothing measured). Only the first call counts.
   */
  ended(status?: number): void {
    if (this.#over) return
    this.#over = true
    const failed = status !== undefined && status >= 500
    const slot = this.slot
    if (slot !== undefined) void slot.release(failed)
    else if (this.#since >= 0 && status !== undefined)
      this.gate.measure(performance.now() - this.#since, failed, this.decision)
  }

  /** The route threw, with no response: ended as failed work. */
  failed(): void {
    this.ended(500)
  }

  /**
   * The route's `release()`: ends what the decision holds: a request-mode slot now, or a visitor's
   * pass (its slot freed and, while the headers are not sent, the response's pass cookie replaced by
   * one that clears it). `true` when a live slot was freed. Never rejects.
   */
  release(): Promise<boolean> {
    const decision = this.decision
    if (holdsPass(decision)) {
      const current = this.cookies()
      if (current !== undefined) {
        const prefix = `${this.gate.cookieName}=`
        this.setCookies([...current.filter((c) => !c.startsWith(prefix)), this.gate.clearCookie(this.secure())])
      }
    }
    return this.gate.release(decision)
  }
}
