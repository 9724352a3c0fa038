/**
 * What a decision holds and how it is released, for the adapters: both build `reply.airlock`
 * (Fastify) and `res.locals.airlock` (Express) here, so the branching lives in one place.
 */
import { holdsPass, type Gate } from './gate.js'
import type { AirlockHandle, GateDecision, RequestSlot } from './types.js'

/** For a request the gate did not decide (a route without a gate): nothing to release. */
export const NO_HANDLE: AirlockHandle = Object.freeze({ decision: undefined, release: async () => false })

/**
 * An upgraded connection (a WebSocket) is a request that lasts: its slot is kept alive in the store
 * while the socket is open, released once when it closes, and the socket is ended if the store no
 * longer has the slot (so open sockets never outnumber the limit).
 */
export function holdWhileOpen(
  socket: { once(event: 'close', listener: () => void): unknown; destroy(): void },
  slot: RequestSlot,
): void {
  slot.hold(() => socket.destroy())
  socket.once('close', () => void slot.release())
}

/** The response side of a release: its current `Set-Cookie` values, and how to replace them. */
export interface CookieJar {
  /** `undefined` once the headers are sent (then the browser keeps the cookie until it expires). */
  get(): string[] | undefined
  set(cookies: string[]): void
}

/**
 * The route's view of a decision. `release()` ends what it holds: a request-mode slot now, or a
 * visitor's pass (its slot is freed and, while the headers are not sent, the response clears the
 * cookie, replacing any pass cookie set earlier in this response). Never rejects. One object a
 * request: an adapter's subclass reaches its response (the cookies, HTTPS) only when released.
 */
export abstract class GateHandle<Req> implements AirlockHandle {
  constructor(
    readonly gate: Gate<Req>,
    readonly decision: GateDecision,
  ) {}

  /** The response's current `Set-Cookie` values; `undefined` once the headers are sent. */
  protected abstract cookies(): string[] | undefined
  /** Replaces the response's `Set-Cookie` values. */
  protected abstract setCookies(cookies: string[]): void
  /** Whether the request came over HTTPS (read only when a cookie is cleared). */
  protected abstract secure(): boolean

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

/** A handle on a {@link CookieJar} (the proxy's, Fastify's, the fetch adapter's). */
class JarHandle<Req> extends GateHandle<Req> {
  constructor(
    gate: Gate<Req>,
    decision: GateDecision,
    private readonly jar: CookieJar,
    private readonly https: boolean | (() => boolean),
  ) {
    super(gate, decision)
  }
  protected cookies(): string[] | undefined {
    return this.jar.get()
  }
  protected setCookies(cookies: string[]): void {
    this.jar.set(cookies)
  }
  protected secure(): boolean {
    return typeof this.https === 'boolean' ? this.https : this.https()
  }
}

/**
 * The route's view of a decision (see {@link GateHandle}) on a {@link CookieJar}. `secure`: whether
 * the request came over HTTPS, or how to tell (read only when a cookie is cleared).
 */
export function handleFor<Req>(
  gate: Gate<Req>,
  decision: GateDecision,
  jar: CookieJar,
  secure: boolean | (() => boolean),
): AirlockHandle {
  return new JarHandle(gate, decision, jar, secure)
}

/** A `Set-Cookie` header value as a list. */
export function cookieList(header: string | number | string[] | undefined): string[] {
  return Array.isArray(header) ? header : header === undefined ? [] : [String(header)]
}

/**
 * The response header by which an origin (behind `airlock proxy`) or an app (behind the Fastify or
 * Express gate) releases the visitor it answers: `Airlock-Command: release`, as Cloudflare Waiting
 * Room's `Cf-Waiting-Room-Command: revoke`. The adapters act on it and never send it to the client.
 */
export const COMMAND_HEADER = 'airlock-command'

/**
 * Acts on an `Airlock-Command` value: `release` ends what the decision holds, as
 * `control.release()` (the slot or pass freed, the cookie cleared), and is published on
 * `airlock:release` with `by: 'origin'`. `false` for a value it does not know (nothing done).
 */
export function runCommand(control: AirlockHandle, value: string | number | string[] | undefined): boolean {
  const command = String(value ?? '')
    .trim()
    .toLowerCase()
  if (command !== 'release') return false
  if (control.decision === undefined || control.decision.kind === 'bypass') return true
  void control.release() // told as a release by the origin (gate.release's default)
  return true
}
