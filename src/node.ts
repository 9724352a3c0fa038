/**
 * `airlock-shield/node`: the gate on plain `node:http`, no framework: for a server written with
 * `http.createServer`, or a framework without an adapter of its own (its Node request and response
 * at hand). Built on the admission (src/gate/admission.ts) as ARCHITECTURE.md's "A new adapter" says.
 *
 * ```ts
 * const shield = airlock({ limit: 20 })
 * createServer((req, res) => shield(req, res, (airlock) => route(req, res, airlock))).listen(3000)
 * ```
 * @packageDocumentation
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { clientBehind, type TrustPolicy, type TrustProxyOption, trustPolicy } from './base/client-address.js'
import { optionError } from './base/errors.js'
import { knownKeys, received } from './base/validate.js'
import { passesThrough } from './gate/admission.js'
import { createGate, type Gate } from './gate/gate.js'
import { NO_HANDLE } from './gate/handle.js'
import { type AirlockHandle, GATE_OPTION_KEYS, type GateOptions, type RequestView } from './gate/types.js'
import { endWhenDone, NodeAdmission, sendAnswer, watchCommand } from './node/response.js'

/** Options of {@link airlock}: the gate's, and which proxies in front are believed. */
export interface NodeAirlockOptions extends GateOptions<IncomingMessage> {
  /**
   * The proxies in front whose `X-Forwarded-For` names the client (read from the right, past each
   * trusted hop) and whose `X-Forwarded-Proto: https` makes the pass cookie `Secure`: `true`, a
   * number of hops (`1`: the peer is your one proxy), or addresses, CIDRs and `loopback`,
   * `linklocal`, `uniquelocal`, as Express's `trust proxy` and `airlock proxy`'s take it. Default
   * `false`: the socket's address, HTTPS when the socket is TLS.
   */
  trustProxy?: TrustProxyOption
}

/** The middleware, with its gate (for `state()`) and `close()` (stops the gate's timers, releases pooled request slots). */
export interface NodeAirlock {
  /**
   * Decides the request: answers it (busy, waiting, ...) or calls `next` with the route's view of
   * the decision (`release()` ends the pass or the request's slot early). A request-mode slot is
   * freed when the route ends the response (`res.end`); its status ≥ 500 counts as failed work.
   */
  (req: IncomingMessage, res: ServerResponse, next: (airlock: AirlockHandle) => void): void
  readonly gate: Gate<IncomingMessage>
  close(): Promise<void>
}

/** The gate's view of a Node request (the client's address and HTTPS worked out only when asked). */
class NodeView implements RequestView<IncomingMessage> {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage['headers']
  readonly routing = undefined
  constructor(
    readonly request: IncomingMessage,
    private readonly trusts: TrustPolicy,
  ) {
    this.method = request.method ?? 'GET'
    this.url = request.url ?? '/'
    this.headers = request.headers
  }
  get ip(): string | undefined {
    const remote = this.request.socket?.remoteAddress
    return remote === undefined ? undefined : clientBehind(remote, this.headers['x-forwarded-for'], this.trusts)
  }
  get secure(): boolean {
    const socket = this.request.socket as { encrypted?: boolean; remoteAddress?: string } | undefined
    if (socket?.encrypted) return true
    const proto = this.headers['x-forwarded-proto']
    if (typeof proto !== 'string' || socket?.remoteAddress === undefined || !this.trusts(socket.remoteAddress))
      return false
    return proto.split(',')[0]!.trim().toLowerCase() === 'https'
  }
}

/**
 * The gate in front of a plain `node:http` handler: `shield(req, res, (airlock) => route(req, res, airlock))`.
 * Validates every option now (`ERR_AIRLOCK_OPTION`).
 */
export function airlock(options: NodeAirlockOptions = {}): NodeAirlock {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    optionError(`airlock options must be an object, got ${received(options)}`)
  knownKeys('airlock', options, [...GATE_OPTION_KEYS, 'trustProxy'])
  const { trustProxy, ...gateOptions } = options
  const trusts = trustPolicy(trustProxy)
  const gate = createGate<IncomingMessage>(gateOptions)

  const fail = (res: ServerResponse, err: unknown): void => {
    gate.logger.error?.({ cause: (err as Error)?.message }, 'airlock: the gate failed')
    if (res.headersSent) return void res.destroy()
    res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' })
    res.end('internal error\n')
  }

  const middleware = (req: IncomingMessage, res: ServerResponse, next: (airlock: AirlockHandle) => void): void => {
    const view = new NodeView(req, trusts)
    const decided = gate.decide(view)
    const apply = (d: Awaited<typeof decided>): void => {
      if (passesThrough(d)) return next(NO_HANDLE)
      const admission = new NodeAdmission(gate, d, res, view)
      const answer = admission.open()
      if (answer !== undefined) return sendAnswer(res, answer)
      if (d.kind !== 'bypass') watchCommand(res, admission)
      if (admission.watches) endWhenDone(req, res, admission)
      next(d.kind === 'bypass' ? NO_HANDLE : admission)
    }
    if (decided instanceof Promise) decided.then(apply, (err: unknown) => fail(res, err))
    else apply(decided)
  }
  return Object.assign(middleware, { gate, close: () => gate.close() })
}

export default airlock
