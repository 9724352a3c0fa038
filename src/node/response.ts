/**
 * The gate on Node's `ServerResponse`: what the adapters on Node's req/res (Express, Koa, the plain
 * `node:http` adapter) share. {@link NodeAdmission} is the admission (src/gate/admission.ts) on a
 * response; {@link sendAnswer} sends the gate's own answer; {@link endWhenDone} tells the admission
 * when the route's work is over; {@link watchCommand} acts on `Airlock-Command` before the head goes.
 */
import { IncomingMessage, ServerResponse } from 'node:http'
import { varyWith } from '../base/http.js'
import { Admission } from '../gate/admission.js'
import type { Gate } from '../gate/gate.js'
import { COMMAND_HEADER, cookieList, holdWhileOpen } from '../gate/handle.js'
import type { GateDecision, GateResponse } from '../gate/types.js'

/** An admission on a Node `ServerResponse`. `https`: whether the request came over HTTPS, or how to tell. */
export class NodeAdmission<Req> extends Admission<Req> {
  constructor(
    gate: Gate<Req>,
    decision: GateDecision,
    readonly res: ServerResponse,
    private readonly https: { readonly secure: boolean },
  ) {
    super(gate, decision)
  }
  protected addHeader(name: string, value: string): void {
    const res = this.res
    const current = res.getHeader(name)
    if (current === undefined) res.setHeader(name, value)
    else if (name === 'set-cookie') res.setHeader(name, [...cookieList(current), value])
    else res.setHeader(name, `${String(current)}, ${value}`)
  }
  protected cookies(): string[] | undefined {
    return this.res.headersSent ? undefined : cookieList(this.res.getHeader('set-cookie'))
  }
  protected setCookies(cookies: string[]): void {
    this.res.setHeader('set-cookie', cookies)
  }
  protected secure(): boolean {
    return this.https.secure
  }
}

/** Sends the gate's own answer on `res` (its `Vary` joined to what the application already varies on, not replaced). */
export function sendAnswer(res: ServerResponse, response: GateResponse): void {
  res.statusCode = response.status
  for (const [k, v] of Object.entries(response.headers))
    res.setHeader(k, k === 'vary' ? varyWith(res.getHeader('vary'), v) : v)
  res.end(response.body)
}

/**
 * Tells `admission` when the route's work is over: when it ends the response (`res.end`), even if
 * the client left before; `finish` as a second signal. Never on the client's `close`: the route may
 * still be busy with the request (a request-mode slot's `ttl` is the last resort). An upgrade
 * (express-ws) is a request that lasts: its slot is kept alive until the socket closes.
 */
export function endWhenDone<Req>(req: IncomingMessage, res: ServerResponse, admission: Admission<Req>): void {
  const slot = admission.slot
  if (slot !== undefined && req.headers.upgrade !== undefined) holdWhileOpen(req.socket, slot)
  const end = res.end
  res.end = function (this: ServerResponse, ...args: unknown[]) {
    res.end = end
    admission.ended(res.statusCode)
    return (end as (...a: unknown[]) => ServerResponse).apply(this, args)
  } as ServerResponse['end']
  res.once('finish', () => admission.ended(res.statusCode))
}

/**
 * A gated response's admission, until its head is written (see {@link watchCommand}): a property of
 * the response (a `WeakMap` entry per response cost more), named by a registered symbol so that two
 * copies of the package in one process (its ESM and CommonJS builds) share it with the one hook.
 */
const COMMAND = Symbol.for('airlock-shield.command')
const HOOKED = Symbol.for('airlock-shield.command-hook')
/** What `Airlock-Command` acts on (any admission: its request type does not matter here). */
type Commandable = Pick<Admission, 'command'>
type Commanded = ServerResponse & { [COMMAND]?: Commandable | undefined }

/** Takes `Airlock-Command` out of the response's headers and out of `writeHead`'s own (an object, or a flat [name, value, ...] list). */
function takeCommand(res: ServerResponse, args: unknown[], admission: Commandable): void {
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
  if (value !== undefined) admission.command(value)
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

/** A `writeHead` on `target` that acts on the response's admission, then calls the one it hides (read at call time). */
function installHook(target: object): void {
  const own = Object.hasOwn(target, 'writeHead') ? (target as ServerResponse).writeHead : undefined
  Object.defineProperty(target, 'writeHead', {
    configurable: true,
    writable: true,
    value: function writeHead(this: ServerResponse, ...args: unknown[]) {
      const admission = (this as Commanded)[COMMAND]
      if (admission !== undefined) {
        ;(this as Commanded)[COMMAND] = undefined
        takeCommand(this, args, admission)
      }
      const inner = own ?? (Object.getPrototypeOf(target) as ServerResponse).writeHead
      return (inner as (...a: unknown[]) => ServerResponse).apply(this, args)
    },
  })
  Object.defineProperty(target, HOOKED, { value: true })
}

/**
 * `Airlock-Command: release` set by a route: acted on and removed just before the headers are
 * written (an explicit `writeHead` or the implicit one of the first write), never sent.
 *
 * On Express the `writeHead` that reads it is installed once, on Express's response object (every
 * Express response passes through it; those without an admission pay one property read), and each
 * gated response only registers its admission: an own `writeHead` assigned to every response (as
 * `on-headers` does) cost the pass holders' requests about 15 % of bare Express's server CPU
 * (bench/overhead.ts). A response without such a prototype (plain `node:http`, Koa) gets its own.
 */
export function watchCommand<Req>(res: ServerResponse, admission: Admission<Req>): void {
  const target = hookTarget(res)
  if (target !== undefined) {
    if (!Object.hasOwn(target, HOOKED)) installHook(target)
    ;(res as Commanded)[COMMAND] = admission as Commandable
    return
  }
  const writeHead = res.writeHead
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    res.writeHead = writeHead
    takeCommand(this, args, admission)
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args)
  } as ServerResponse['writeHead']
}

/** Whether `value` is a Node request (`app.use(airlock)` misuse: Express calls the factory with (req, res, next)). */
export function isNodeRequest(value: unknown): value is IncomingMessage {
  return value instanceof IncomingMessage
}
