/**
 * The small pieces the admission (admission.ts) and the adapters share: the handle of a request no
 * gate decided, holding a slot while an upgraded socket is open, `Set-Cookie` as a list, and the
 * `Airlock-Command` header.
 */
import type { AirlockHandle, RequestSlot } from './types.js'

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
