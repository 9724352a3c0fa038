import fp from 'fastify-plugin'
import type {
  FastifyInstance,
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  RouteOptions,
} from 'fastify'
import {
  createGate,
  GATE_OPTION_KEYS,
  type AirlockControl,
  type Gate,
  type GateDecision,
  type GateOptions,
} from './core/gate.js'
import { optionError } from './core/errors.js'
import { describe } from './core/validate.js'

/** Options of the Fastify plugin: the gate's options, plus `global`. */
export interface AirlockShieldOptions extends GateOptions<FastifyRequest> {
  /**
   * `true` (default): every route registered after the plugin is gated, except those with
   * `config: { airlock: false }`. `false`: only routes with `config: { airlock: {...} }` are gated.
   */
  global?: boolean
}

/** A route's own gate: its own `name` (its own slots), overriding the plugin's options. */
export type AirlockRouteGateOptions = GateOptions<FastifyRequest> & { name: string }

/** `config.airlock` of a route: `false` opts out, `true` uses the plugin's gate, an object its own gate. */
export type AirlockRouteConfig = boolean | AirlockRouteGateOptions

declare module 'fastify' {
  interface FastifyContextConfig {
    airlock?: AirlockRouteConfig
  }
  interface FastifyReply {
    /** This request's gate decision, and `release()` to end a pass or a request slot early. */
    readonly airlock: AirlockControl
  }
  interface FastifyInstance {
    /** The plugin's gate (route-level gates are separate). */
    readonly airlockGate: Gate<FastifyRequest>
  }
}

const kGate = Symbol('airlock.gate')
const kDecision = Symbol('airlock.decision')
const kFlags = Symbol('airlock.flags')
const kHook = Symbol('airlock.hook')
const ABORTED = 1
const SENT = 2

type Hooked = FastifyReply & {
  [kGate]: Gate<FastifyRequest> | null
  [kDecision]: GateDecision | null
  [kFlags]: number
}

const NONE: AirlockControl = Object.freeze({ decision: undefined, release: async () => false })

function control(reply: Hooked): AirlockControl {
  const gate = reply[kGate]
  const decision = reply[kDecision]
  if (gate === null || decision === null) return NONE
  return {
    decision,
    async release() {
      if (decision.kind === 'admit' && decision.slot) return decision.slot.release()
      if (decision.kind !== 'admit' && decision.kind !== 'pass') return false
      if (!reply.sent && !reply.raw.headersSent) {
        const prefix = `${gate.cookieName}=`
        const current = reply.getHeader('set-cookie')
        const others = (Array.isArray(current) ? current : current === undefined ? [] : [String(current)]).filter(
          (c) => !c.startsWith(prefix),
        )
        reply.removeHeader('set-cookie')
        for (const c of others) reply.header('set-cookie', c)
        reply.header('set-cookie', gate.clearCookie(reply.request.protocol === 'https'))
      }
      return gate.release(decision)
    },
  }
}

function apply(request: FastifyRequest, reply: Hooked, gate: Gate<FastifyRequest>, d: GateDecision, done: HookHandlerDoneFunction): void {
  if (d.kind !== 'bypass') {
    reply[kGate] = gate
    reply[kDecision] = d
  }
  if (d.setCookie !== undefined) reply.header('set-cookie', d.setCookie)
  if (d.response !== undefined) {
    reply.code(d.response.status).headers(d.response.headers).send(d.response.body)
    return
  }
  if (d.kind === 'admit' && d.slot !== undefined) watchAbort(request, reply, d.slot)
  done()
}

/** Request mode: after a client abort, onResponse never comes; release when the work is over. */
function watchAbort(request: FastifyRequest, reply: Hooked, slot: { release(): Promise<boolean> }): void {
  const res = reply.raw
  const onClose = (): void => {
    if (res.writableFinished) return
    reply[kFlags] |= ABORTED
    if (reply[kFlags] & SENT) void slot.release()
  }
  if (res.destroyed || request.raw.destroyed) onClose()
  else res.once('close', onClose)
}

function slotOf(reply: Hooked): { release(): Promise<boolean> } | undefined {
  const d = reply[kDecision]
  return d !== null && d.kind === 'admit' ? d.slot : undefined
}

function makeHooks(gate: Gate<FastifyRequest>) {
  function onRequest(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const d = gate.decide({
      method: request.method,
      url: request.url,
      headers: request.headers,
      secure: request.protocol === 'https',
      request,
    })
    if (d instanceof Promise) d.then((decision) => apply(request, reply as Hooked, gate, decision, done), done)
    else apply(request, reply as Hooked, gate, d, done)
  }
  ;(onRequest as unknown as Record<symbol, boolean>)[kHook] = true
  if (gate.mode === 'session') return { onRequest }

  // Request mode: release once, on the first of onResponse, or (after an abort) onSend / onError.
  function onResponse(this: FastifyInstance, _request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    void slotOf(reply as Hooked)?.release()
    done()
  }
  function onSend(this: FastifyInstance, _request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: unknown) => void): void {
    const r = reply as Hooked
    r[kFlags] |= SENT
    if (r[kFlags] & ABORTED) void slotOf(r)?.release()
    done(null, payload)
  }
  function onError(this: FastifyInstance, _request: FastifyRequest, reply: FastifyReply, _error: Error, done: () => void): void {
    const r = reply as Hooked
    if (r[kFlags] & ABORTED) void slotOf(r)?.release()
    done()
  }
  return { onRequest, onResponse, onSend, onError }
}

type HookList = RouteOptions['onRequest']

function prepend<T>(existing: T | T[] | undefined, hook: T): T[] {
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]
  return [hook, ...list]
}

function hasOurHook(list: HookList): boolean {
  const arr = list === undefined ? [] : Array.isArray(list) ? list : [list]
  return arr.some((h) => (h as unknown as Record<symbol, boolean>)[kHook] === true)
}

/** Options a route-level gate inherits from the plugin (its own `name` picks its own cookie). */
function inherited(base: AirlockShieldOptions, gate: Gate<FastifyRequest>): GateOptions<FastifyRequest> {
  const { global: _global, cookie, ...rest } = base
  const out: GateOptions<FastifyRequest> = { ...rest, logger: gate.logger }
  if (cookie) {
    const { name: _name, ...cookieRest } = cookie
    out.cookie = cookieRest
  }
  if (!gate.randomSecret) out.secret = gate.secrets
  return out
}

const plugin: FastifyPluginAsync<AirlockShieldOptions> = async (fastify, options) => {
  if (options === null || typeof options !== 'object') {
    optionError(`airlockShield options must be an object, got ${describe(options)}`)
  }
  // Fastify's own register() options are not ours.
  const { global = true, prefix: _p, logLevel: _l, ...gateOptions } = options as AirlockShieldOptions & {
    prefix?: unknown
    logLevel?: unknown
  }
  if (typeof global !== 'boolean') optionError(`global must be a boolean, got ${describe(global)}`)
  const gate = createGate<FastifyRequest>({ logger: fastify.log, ...gateOptions })
  const gates: Gate<FastifyRequest>[] = [gate]
  const defaultHooks = makeHooks(gate)
  // One gate per route config object: Fastify's derived HEAD route shares its GET route's config.
  const routeHooks = new WeakMap<object, ReturnType<typeof makeHooks>>()

  fastify.decorate('airlockGate', gate)
  fastify.decorateReply(kGate, null)
  fastify.decorateReply(kDecision, null)
  fastify.decorateReply(kFlags, 0)
  fastify.decorateReply('airlock', {
    getter(this: FastifyReply) {
      return control(this as Hooked)
    },
  })

  fastify.addHook('onRoute', (route) => {
    const cfg = (route.config as { airlock?: unknown } | undefined)?.airlock
    if (cfg === false || (cfg === undefined && !global)) return
    if (hasOurHook(route.onRequest)) return // e.g. the HEAD route Fastify derives from a GET route
    let hooks = defaultHooks
    if (cfg !== undefined && cfg !== true) {
      const where = `config.airlock of ${route.method} ${route.url}`
      if (cfg === null || typeof cfg !== 'object') {
        optionError(`${where} must be false, true or gate options such as { name: 'checkout', limit: 5 }, got ${describe(cfg)}`)
      }
      const routeOptions = cfg as AirlockRouteGateOptions
      if (typeof routeOptions.name !== 'string') {
        optionError(`${where} needs a name (a route-level gate has its own slots), e.g. { name: 'checkout', limit: 5 }`)
      }
      for (const key of Object.keys(routeOptions)) {
        if (!GATE_OPTION_KEYS.includes(key)) {
          optionError(`${where} has no option '${key}'; known options are ${GATE_OPTION_KEYS.join(', ')}`)
        }
      }
      let known = routeHooks.get(routeOptions)
      if (known === undefined) {
        const routeGate = createGate<FastifyRequest>({ ...inherited(options, gate), ...routeOptions })
        gates.push(routeGate)
        known = makeHooks(routeGate)
        routeHooks.set(routeOptions, known)
      }
      hooks = known
    }
    route.onRequest = prepend(route.onRequest, hooks.onRequest) as HookList
    if ('onResponse' in hooks) {
      route.onResponse = prepend(route.onResponse, hooks.onResponse) as RouteOptions['onResponse']
      route.onSend = prepend(route.onSend, hooks.onSend) as RouteOptions['onSend']
      route.onError = prepend(route.onError, hooks.onError) as RouteOptions['onError']
    }
  })

  fastify.addHook('onClose', async () => {
    await Promise.all(gates.map((g) => g.close()))
  })
}

/**
 * The Fastify plugin: `await app.register(airlockShield, { limit: 20, store, secret })`.
 * Gates every route registered after it (see `global`); a route opts out with
 * `config: { airlock: false }` or gets its own gate with `config: { airlock: { name, limit } }`.
 */
export const airlockShield = fp(plugin, { name: 'airlock-shield', fastify: '5.x' })
export default airlockShield
