/**
 * The Fastify 5 plugin (entry `airlock-shield/fastify`, src/fastify.ts). It only translates the gate's decisions into
 * replies (`onRequest`), and in request mode releases the slot once the work is over.
 */
import fp from 'fastify-plugin'
import type {
  FastifyInstance,
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  RouteOptions,
} from 'fastify'
import { createGate, type Gate } from '../gate/gate.js'
import { LEAVE_QUERY } from '../pages/left.js'
import { Admission, passesThrough } from '../gate/admission.js'
import { COMMAND_HEADER, cookieList, holdWhileOpen, NO_HANDLE, runCommand } from '../gate/handle.js'
import {
  GATE_OPTION_KEYS,
  type AirlockHandle,
  type GateDecision,
  type GateOptions,
  type RequestView,
  type RoutingRules,
} from '../gate/types.js'
import { AirlockError, optionError } from '../base/errors.js'
import { varyWith } from '../base/http.js'
import { received, knownKeys, unknownKeyMessage } from '../base/validate.js'

/** Options of the Fastify plugin: the gate's options, plus `global`. */
export interface AirlockShieldOptions extends GateOptions<FastifyRequest> {
  /**
   * `true` (default): every route is gated, except those with `config: { airlock: false }` (or
   * their own gate). `false`: only routes that ask for this gate (`config: { airlock: true }`, or
   * its name) are gated.
   */
  global?: boolean
}
const PLUGIN_OPTION_KEYS: readonly string[] = [...GATE_OPTION_KEYS, 'global']

/** A route's own gate: its own `name` (its own slots), overriding the plugin's options. */
export type AirlockRouteGateOptions = GateOptions<FastifyRequest> & { name: string }

/**
 * `config.airlock` of a route: `false` opts out of every gate; `true` asks for every registered
 * gate (also those with `global: false`); a string asks for the registered gate of that name; an
 * object gives the route its own gate.
 */
export type AirlockRouteConfig = boolean | string | AirlockRouteGateOptions

declare module 'fastify' {
  interface FastifyContextConfig {
    airlock?: AirlockRouteConfig
  }
  interface FastifyReply {
    /** This request's gate decision, and `release()` to end a pass or a request slot early. */
    readonly airlock: AirlockHandle
  }
  interface FastifyInstance {
    /** The gate of the first registration (route-level gates are separate). */
    readonly airlockGate: Gate<FastifyRequest>
    /** Every registered gate, by name. */
    readonly airlockGates: ReadonlyMap<string, Gate<FastifyRequest>>
  }
}

/** Per-instance registry, on the root instance: the registered gates and their reply slots. */
const kRegistry = Symbol('airlock.registry')

/** Where one gate keeps its admission on a reply (its own symbol, so stacked gates never collide). */
type ReplyKey = symbol
type Hooked = FastifyReply & Record<symbol, FastifyAdmission | null>

interface Registry {
  gates: Map<string, Gate<FastifyRequest>>
  /** Most recent last: `reply.airlock` is the last gate's admission on the reply. */
  slots: ReplyKey[]
}

/**
 * An admission on a Fastify reply. Request mode: `aborted` (the client left before the answer was
 * sent) and `sent` (onSend ran): after an abort the slot is freed only once the route's work is over.
 */
class FastifyAdmission extends Admission<FastifyRequest> {
  aborted = false
  sent = false
  constructor(
    gate: Gate<FastifyRequest>,
    decision: GateDecision,
    private readonly reply: FastifyReply,
  ) {
    super(gate, decision)
  }
  protected addHeader(name: string, value: string): void {
    const reply = this.reply
    // Fastify appends a `set-cookie` to those already set; another header is replaced: joined here.
    if (name === 'set-cookie' || !reply.hasHeader(name)) reply.header(name, value)
    else reply.header(name, `${String(reply.getHeader(name))}, ${value}`)
  }
  protected cookies(): string[] | undefined {
    const reply = this.reply
    return reply.sent || reply.raw.headersSent ? undefined : cookieList(reply.getHeader('set-cookie'))
  }
  protected setCookies(cookies: string[]): void {
    this.reply.removeHeader('set-cookie')
    for (const c of cookies) this.reply.header('set-cookie', c)
  }
  protected secure(): boolean {
    return this.reply.request.protocol === 'https'
  }
}

const folds = new WeakMap<object, boolean>()
/** Whether the server's router ignores case (`routerOptions.caseSensitive: false`, or the older top-level option). */
function foldsCase(server: FastifyInstance): boolean {
  let fold = folds.get(server.initialConfig)
  if (fold === undefined) {
    const config = server.initialConfig as { routerOptions?: { caseSensitive?: boolean }; caseSensitive?: boolean }
    fold = (config.routerOptions?.caseSensitive ?? config.caseSensitive) === false
    folds.set(server.initialConfig, fold)
  }
  return fold
}

/**
 * What the gate sees of a Fastify request. Fastify's `ip`, `protocol` and `routeOptions` are getters
 * that compute (or build an object) on each read: read only when the gate asks (a pass holder's
 * decision asks for none of them unless a bypass rule is set).
 */
class FastifyView implements RequestView<FastifyRequest> {
  readonly method: string
  readonly url: string
  readonly headers: FastifyRequest['headers']
  constructor(readonly request: FastifyRequest) {
    this.method = request.method
    this.url = request.url
    this.headers = request.headers
  }
  get secure(): boolean {
    return this.request.protocol === 'https'
  }
  get ip(): string {
    return this.request.ip
  }
  /**
   * The route find-my-way chose (a static one is the path it routed: trailing and doubled slashes,
   * escapes and case already resolved), for the bypass rules.
   */
  get routing(): RoutingRules {
    return { route: this.request.routeOptions.url, foldCase: foldsCase(this.request.server) }
  }
}

function viewOf(request: FastifyRequest): RequestView<FastifyRequest> {
  return new FastifyView(request)
}

function handleOf(reply: Hooked, registry: Registry): AirlockHandle {
  for (let i = registry.slots.length - 1; i >= 0; i--) {
    const admission = reply[registry.slots[i]!]
    if (admission != null) return admission
  }
  return NO_HANDLE
}

function makeHooks(gate: Gate<FastifyRequest>, key: ReplyKey) {
  /**
   * Request mode: the slot is freed when the response closes, sent (failed: a 5xx) or not. After a
   * client abort, only once the route's work is over (onSend or onError). One `close` listener, not
   * an onResponse hook: such a hook makes Fastify add and remove two listeners of its own on every
   * request, and `close` comes after `finish` in any case.
   */
  const watchClose = (request: FastifyRequest, reply: FastifyReply, admission: FastifyAdmission): void => {
    const res = reply.raw
    const onClose = (): void => {
      if (res.writableFinished) return admission.ended(res.statusCode)
      admission.aborted = true
      if (admission.sent) admission.ended()
    }
    if (res.destroyed || request.raw.destroyed) onClose()
    else res.on('close', onClose)
  }

  const apply = (request: FastifyRequest, reply: Hooked, d: GateDecision, done: HookHandlerDoneFunction): void => {
    // Not gated and nothing to add: on to the route, with nothing made.
    if (passesThrough(d)) return done()
    const admission = new FastifyAdmission(gate, d, reply)
    if (d.kind !== 'bypass') reply[key] = admission
    const answer = admission.open()
    if (answer !== undefined) {
      // Vary: joined to what the application already said it varies on (Origin, ...), not replaced.
      const { headers } = answer
      const vary =
        headers.vary !== undefined && reply.hasHeader('vary')
          ? varyWith(reply.getHeader('vary'), headers.vary)
          : undefined
      reply
        .code(answer.status)
        .headers(vary === undefined ? headers : { ...headers, vary })
        .send(answer.body)
      return
    }
    const slot = admission.slot
    if (slot !== undefined) {
      // Session mode's hooks free no slot: a request let in on the local quota (store down) frees its place when it closes.
      if (gate.mode === 'session')
        reply.raw.once('close', () => admission.ended(reply.raw.writableFinished ? reply.raw.statusCode : undefined))
      else watchClose(request, reply, admission)
      // An upgrade (@fastify/websocket) is a request that lasts: its slot is kept alive until the socket closes.
      if (request.raw.headers.upgrade !== undefined) holdWhileOpen(request.raw.socket, slot)
    }
    done()
  }

  const run = (
    d: GateDecision | Promise<GateDecision>,
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void => {
    if (d instanceof Promise) d.then((decision) => apply(request, reply as Hooked, decision, done), done)
    else apply(request, reply as Hooked, d, done)
  }

  function onRequest(
    this: FastifyInstance,
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    run(gate.decide(viewOf(request)), request, reply, done)
  }
  /** For requests this gate sees but does not decide: confirms the visitor's pass. */
  function onConfirm(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    run(gate.confirm(viewOf(request)), request, reply, done)
  }
  if (gate.mode === 'session') {
    if (!gate.adaptive) return { onRequest, onConfirm }
    // The adaptive limit learns from the route's own time (from the gate's decision on: not the decision's store call, nor a wait).
    function onMeasure(
      this: FastifyInstance,
      _request: FastifyRequest,
      reply: FastifyReply,
      done: HookHandlerDoneFunction,
    ): void {
      const admission = (reply as Hooked)[key]
      if (admission != null && admission.slot === undefined) admission.ended(reply.statusCode)
      done()
    }
    return { onRequest, onConfirm, onMeasure }
  }

  // Request mode: freed once, when the response closes (watchClose), or after an abort by onSend / onError.
  function onSend(
    this: FastifyInstance,
    _request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: (err: Error | null, payload?: unknown) => void,
  ): void {
    const admission = (reply as Hooked)[key]
    if (admission != null) {
      admission.sent = true
      if (admission.aborted) admission.ended()
    }
    done(null, payload)
  }
  function onError(
    this: FastifyInstance,
    _request: FastifyRequest,
    reply: FastifyReply,
    _error: Error,
    done: () => void,
  ): void {
    const admission = (reply as Hooked)[key]
    if (admission?.aborted) admission.ended()
    done()
  }
  return { onRequest, onConfirm, onSend, onError }
}

type HookList = RouteOptions['onRequest']

function prepend<T>(existing: T | T[] | undefined, hook: T): T[] {
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]
  return [hook, ...list]
}

function attach(route: RouteOptions, hooks: ReturnType<typeof makeHooks>): void {
  route.onRequest = prepend(route.onRequest, hooks.onRequest) as HookList
  if ('onMeasure' in hooks) route.onResponse = prepend(route.onResponse, hooks.onMeasure) as RouteOptions['onResponse']
  if ('onSend' in hooks) {
    route.onSend = prepend(route.onSend, hooks.onSend) as RouteOptions['onSend']
    route.onError = prepend(route.onError, hooks.onError) as RouteOptions['onError']
  }
}

/** A reply slot for one more gate (its own symbol), registered on the instance. */
function newReplyKey(fastify: FastifyInstance, registry: Registry, name: string): ReplyKey {
  const key = Symbol(`airlock.${name}`)
  registry.slots.push(key)
  fastify.decorateReply(key, null)
  return key
}

/** The registry of the root instance (every registration, wherever it happens, shares it). */
function registryOf(fastify: FastifyInstance): Registry {
  const holder = fastify as unknown as Record<symbol, Registry | undefined>
  if (holder[kRegistry]) return holder[kRegistry]
  const registry: Registry = { gates: new Map(), slots: [] }
  fastify.decorate(kRegistry, { getter: () => registry })
  fastify.decorate('airlockGates', { getter: () => registry.gates })
  fastify.decorate('airlockGate', { getter: () => registry.gates.values().next().value as Gate<FastifyRequest> })
  fastify.decorateReply('airlock', {
    getter(this: FastifyReply) {
      return handleOf(this as Hooked, registry)
    },
  })
  // `Airlock-Command: release` set by a route: the visitor's place is given back, the header never sent.
  fastify.addHook('onSend', function airlockCommand(_request, reply, payload, done) {
    const value = reply.getHeader(COMMAND_HEADER)
    if (value !== undefined) {
      reply.removeHeader(COMMAND_HEADER)
      const handle = handleOf(reply as Hooked, registry)
      if (handle !== NO_HANDLE) runCommand(handle, value)
    }
    done(null, payload)
  })
  return registry
}

function checkRouteGate(cfg: unknown, where: string): AirlockRouteGateOptions {
  if (cfg === null || typeof cfg !== 'object') {
    optionError(
      `${where} must be false, true, a gate's name or gate options such as { name: 'checkout', limit: 5 }, got ${received(cfg)}`,
    )
  }
  const routeOptions = cfg as AirlockRouteGateOptions
  if (typeof routeOptions.name !== 'string') {
    optionError(`${where} needs a name (a route-level gate has its own slots), e.g. { name: 'checkout', limit: 5 }`)
  }
  for (const key of Object.keys(routeOptions)) {
    if (!GATE_OPTION_KEYS.includes(key)) {
      optionError(unknownKeyMessage(where, key, GATE_OPTION_KEYS))
    }
  }
  return routeOptions
}

const plugin: FastifyPluginAsync<AirlockShieldOptions> = async (fastify, options) => {
  if (options === null || typeof options !== 'object') {
    optionError(`airlockShield options must be an object, got ${received(options)}`)
  }
  // Fastify's own register() options are not ours.
  const {
    global = true,
    prefix: _p,
    logLevel: _l,
    ...gateOptions
  } = options as AirlockShieldOptions & {
    prefix?: unknown
    logLevel?: unknown
  }
  if (typeof global !== 'boolean') optionError(`global must be a boolean, got ${received(global)}`)
  knownKeys('airlockShield', gateOptions, PLUGIN_OPTION_KEYS)
  const gate = createGate<FastifyRequest>({ logger: fastify.log, ...gateOptions })
  const registry = registryOf(fastify)
  if (registry.gates.has(gate.name)) {
    optionError(
      `airlockShield is already registered with a gate named '${gate.name}': give this registration its own name ` +
        `(name: 'api'), or give routes their own gate with config: { airlock: { name: 'checkout', limit: 5 } }`,
    )
  }
  registry.gates.set(gate.name, gate)
  const slots = newReplyKey(fastify, registry, gate.name)
  const gates: Gate<FastifyRequest>[] = [gate]
  const hooks = makeHooks(gate, slots)
  // Serve only once every gate has read its live control (a closed site stays closed across a restart).
  let routesSeen = 0
  fastify.addHook('onReady', async () => {
    // Routes exist, yet none was declared where this plugin's hooks apply: it gates nothing.
    if (routesSeen === 0 && !fastify.printRoutes().includes('(empty tree)')) {
      throw new AirlockError(
        'ERR_AIRLOCK_OPTION',
        'airlockShield gates no route: register it on the app itself (not inside app.register(...)) and before your routes; ' +
          'routes declared before it or outside its encapsulation context are not gated',
      )
    }
    await Promise.all(gates.map((g) => g.ready))
  })
  // One gate per route config object: Fastify's derived HEAD route shares its GET route's config.
  const routeHooks = new WeakMap<object, ReturnType<typeof makeHooks>>()

  // A route this gate does not decide still confirms the visitor's pass (session mode): a reader
  // whose page only fetches ungated assets keeps its slot.
  const confirmHook = (route: RouteOptions): void => {
    if (gate.mode === 'session') route.onRequest = prepend(route.onRequest, hooks.onConfirm) as HookList
  }
  fastify.addHook('onRoute', (route) => {
    routesSeen++
    const cfg = (route.config as { airlock?: unknown } | undefined)?.airlock
    if (cfg !== false && (cfg === undefined ? global : cfg === true || cfg === gate.name)) {
      attach(route, hooks)
      return
    }
    confirmHook(route)
    if (cfg === false) return
    // A route-level gate: one per config object (the HEAD route Fastify derives from a GET route
    // shares it), made by the first registration.
    if (cfg === undefined || cfg === true || typeof cfg === 'string') return
    let own = routeHooks.get(cfg as object)
    if (own === undefined) {
      if (registry.slots[0] !== slots) return
      const child = gate.child(checkRouteGate(cfg, `config.airlock of ${route.method} ${route.url}`))
      gates.push(child)
      own = makeHooks(child, newReplyKey(fastify, registry, child.name))
      routeHooks.set(cfg as object, own)
    }
    attach(route, own)
  })

  // 404s too (the favicon a browser asks for by itself): an app-level hook, a cheap check for the rest.
  // The waiting page's "Leave the line" posts to its own address, which has no POST route as a rule:
  // that 404 is the gate's to answer.
  if (gate.mode === 'session') {
    fastify.addHook('onRequest', function confirm404(request, reply, done) {
      if (!request.is404) return done()
      if (request.method === 'POST' && request.url.endsWith(LEAVE_QUERY))
        return hooks.onRequest.call(this, request, reply, done)
      hooks.onConfirm(request, reply, done)
    })
  }

  fastify.addHook('onClose', async () => {
    await Promise.all(gates.map((g) => g.close()))
  })
}

/**
 * The Fastify plugin: `await app.register(airlockShield, { limit: 20, store, secret })`.
 * Gates every route (see `global`); a route opts out with `config: { airlock: false }` or gets its
 * own gate with `config: { airlock: { name, limit } }`. Register it again with another `name` for
 * a second gate (`global: false` and `config: { airlock: 'api' }` to pick its routes).
 */
export const airlockShield = fp(plugin, { name: 'airlock-shield', fastify: '5.x' })

export default airlockShield
