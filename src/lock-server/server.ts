/**
 * The HTTP lock service: the Small Resource Server API on Fastify, for services in any language.
 * This file only translates HTTP to {@link ResourceLocks} decisions and back (body reading and
 * replies in http.ts); the store calls of each request run within `storeTimeout` behind a circuit
 * breaker (the gate's {@link StoreGuard}).
 */
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify'
import { isAirlockError, optionError } from '../base/errors.js'
import { loadPeer } from '../base/peer.js'
import { received, duration, knownKeys, oneOf, positiveInteger } from '../base/validate.js'
import { StoreGuard } from '../core/guard.js'
import { resolveStore } from '../stores/resolve.js'
import { resourcesFor, type ResourceStorage } from '../stores/resources.js'
import type { Store } from '../stores/types.js'
import {
  flag,
  httpError,
  jsonBodyParser,
  notFound,
  readAnswer,
  refuse,
  sendError,
  ticketHeader,
  type DataFormat,
  type JsonBody,
} from './http.js'
import { keyRing, LEVELS, type ApiKeys, type Level } from './keys.js'
import { checkTimeout, DEFAULT_TIMEOUT_S, isLockRequestError, ResourceLocks, type LockQueueOptions } from './locks.js'

/** Options of {@link createLockServer}. */
export interface LockServerOptions {
  /**
   * Where locks live (as leases). Default: the process-wide memory store. With `redisStore`, any
   * number of service instances share the locks, and resources and data are kept in the same Redis.
   */
  store?: Store
  /**
   * API keys by level (READ < READ_LOCK < WRITE, each including the ones before). When not given,
   * read from `AIRLOCK_READ_KEY`, `AIRLOCK_READ_LOCK_KEY` and `AIRLOCK_WRITE_KEY` (comma-separated
   * lists). At least one key is required. Clients send theirs as `x-api-key: <key>` or
   * `Authorization: Bearer <key>`.
   */
  apiKeys?: ApiKeys
  /**
   * Where resource definitions and data are kept. Default: on the Redis client of a `redisStore`
   * (kept across restarts), in memory for a memory store (kept for the life of that store object).
   * Required with a custom store.
   */
  resources?: ResourceStorage
  /** Largest request body in bytes; larger gets `413` (a request without a valid key gets `401` first). Default 1 MiB. */
  bodyLimit?: number
  /**
   * How a read answers the stored JSON. `'envelope'` (default, the Small Resource Server's shape, what
   * its PHP client expects): `{"resource":…,"selector":…,"data":"<the JSON, as a string>"}`. `'raw'`:
   * the stored JSON itself as the body. A request picks the other with `?format=raw|envelope`.
   */
  dataFormat?: DataFormat
  /** Budget (ms) for the store calls of one request; past it, or while the store is down, `503`. Default 2000. */
  storeTimeout?: number
  /**
   * Request logging: `false` (default), `true` (Fastify's pino logger at `info`), Fastify logger
   * options (`{ level: 'warn' }`), or a pino-shaped logger instance of your own.
   */
  logger?: boolean | FastifyServerOptions['logger'] | FastifyBaseLogger
  /** How tickets waiting for a lock keep their place in line. */
  queue?: LockQueueOptions
}

/** How long a client may take to send a whole request, body included (ms). */
const REQUEST_TIMEOUT = 30_000

const OPTION_KEYS = [
  'store',
  'apiKeys',
  'resources',
  'bodyLimit',
  'dataFormat',
  'storeTimeout',
  'logger',
  'queue',
] as const

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The lock service's key level a route needs (or a function of the request). */
    lockLevel?: Level | ((request: FastifyRequest) => Level)
  }
}

/**
 * Creates the HTTP lock service (a Fastify instance, not yet listening): named resources with
 * selectors, each (resource, selector) its own lock with its own JSON data. It speaks the Small
 * Resource Server's protocol, so that server's PHP client works unchanged. Full reference, every
 * route and answer: `docs/lock-server.md`.
 *
 * ```ts
 * const app = createLockServer({ store: redisStore({ client: new Redis(url) }) }) // keys from the environment
 * await app.listen({ port: 8080, host: '127.0.0.1' })
 * ```
 *
 * Needs the optional peer `fastify` (5.x). The store (and its client) stay yours to close.
 *
 * @throws `ERR_AIRLOCK_OPTION` naming the first invalid option; `ERR_AIRLOCK_PEER_MISSING` without fastify.
 */
export function createLockServer(options: LockServerOptions = {}): FastifyInstance {
  if (options === null || typeof options !== 'object') {
    optionError(`createLockServer() needs an options object, got ${received(options)}`)
  }
  knownKeys('createLockServer()', options, OPTION_KEYS)
  const store = resolveStore(options.store)
  const keys = keyRing(options.apiKeys)
  const resources = options.resources ?? resourcesFor(store) ?? customStoreResources(store)
  checkResources(resources)
  const locks = new ResourceLocks({ store, resources, queue: options.queue })
  const bodyLimit = positiveInteger('bodyLimit', options.bodyLimit ?? 1024 * 1024)
  const dataFormat = oneOf('dataFormat', options.dataFormat ?? 'envelope', ['envelope', 'raw'] as const)
  const storeTimeout = duration('storeTimeout', options.storeTimeout ?? 2000)
  const logger = checkLoggerOption(options.logger ?? false)

  const fastify = loadPeer<typeof import('fastify').default>('fastify', 'createLockServer()')
  const app = fastify({
    bodyLimit,
    // A request (its body included) arrives within 30 s or is answered 408 (Node's default: 5 minutes).
    requestTimeout: REQUEST_TIMEOUT,
    ...(isLoggerInstance(logger) ? { loggerInstance: logger } : { logger: logger as FastifyServerOptions['logger'] }),
  }) as unknown as FastifyInstance
  const guard = new StoreGuard({
    name: 'lock-server',
    budgetName: 'storeTimeout',
    logger: app.log,
    probe: () => store.state('lock-server.probe'),
    probeTimeout: storeTimeout,
    // A bad request is not the store failing.
    isFailure: (err) => !isLockRequestError(err) && !isAirlockError(err, 'ERR_AIRLOCK_OPTION'),
  })
  /** One request's store work, within the budget and behind the breaker. */
  const guarded = <T>(op: () => Promise<T>): Promise<T> => guard.call(op, Date.now() + storeTimeout, storeTimeout)

  // Every content type is read as JSON text, nesting-checked without recursion (curl -d sends
  // form-urlencoded, fetch text/plain); the stored data is the text as sent.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'string' }, jsonBodyParser)
  app.setErrorHandler((err, request, reply) => sendError(err, request, reply, guard))
  app.addHook('onClose', async () => guard.close())

  // The key is checked before the body is read: a request without a valid key costs no body.
  app.addHook('onRequest', async (request) => {
    const level = request.routeOptions.config.lockLevel
    if (level !== undefined) authorize(keys, request, typeof level === 'function' ? level(request) : level)
  })

  type SelectorRoute = {
    Params: { name: string; selector: string }
    Querystring: Record<string, string>
    Body: JsonBody | undefined
  }
  const lockLevelOf = (request: FastifyRequest): Level =>
    flag('lock', (request.query as Record<string, string>).lock, true) ? LEVELS.readLock : LEVELS.read

  app.get('/health', async () => ({ ok: true }))

  app.post<{ Body: JsonBody | undefined }>(
    '/resource',
    { config: { lockLevel: LEVELS.write } },
    async (request, reply) => {
      const { name, timeout } = resourceBody(request.body?.value)
      const result = await guarded(() => locks.define(name, timeout))
      return reply.code(result.created ? 201 : 200).send({ name: result.name, timeout: result.timeout })
    },
  )

  app.get<{ Params: { name: string } }>(
    '/resource/:name',
    { config: { lockLevel: LEVELS.read } },
    async (request, reply) => {
      const definition = await guarded(() => locks.received(request.params.name))
      if (!definition) return notFound(reply, request.params.name)
      return { name: request.params.name, timeout: definition.timeout }
    },
  )

  app.delete<{ Params: { name: string } }>(
    '/resource/:name',
    { config: { lockLevel: LEVELS.write } },
    async (request, reply) => {
      if (!(await guarded(() => locks.delete(request.params.name)))) return notFound(reply, request.params.name)
      return reply.code(204).send()
    },
  )

  app.get<SelectorRoute>(
    '/resource/:name/:selector',
    { config: { lockLevel: lockLevelOf } },
    async (request, reply) => {
      const { name, selector } = request.params
      const format = formatOf(request, dataFormat)
      reply.header('cache-control', 'no-store')
      if (!flag('lock', request.query.lock, true)) {
        const read = await guarded(() => locks.read(name, selector))
        if (!read.found) return notFound(reply, name)
        return readAnswer(reply, 200, name, selector, read.data, format)
      }
      const outcome = await guarded(() => locks.lock(name, selector, ticketHeader(request, false)))
      switch (outcome.status) {
        case 'not-found':
          return notFound(reply, name)
        case 'locked':
          return readAnswer(
            withTicket(reply, outcome.ticket).header('x-fence', String(outcome.fence)),
            200,
            name,
            selector,
            outcome.data,
            format,
          )
        case 'unavailable':
          return withTicket(reply, outcome.ticket)
            .code(202)
            .header('retry-after', '1')
            .send({ unavailable: true, position: outcome.position, waiting: outcome.waiting })
        case 'full':
          return tooManyWaiting(reply, outcome.waiting)
      }
    },
  )

  // The Small Resource Server's lock: 200 {"locked": true|false} and the ticket to present again.
  app.put<SelectorRoute>(
    '/resource/:name/:selector/lock',
    { config: { lockLevel: LEVELS.readLock } },
    async (request, reply) => {
      const { name, selector } = request.params
      const outcome = await guarded(() => locks.lock(name, selector, ticketHeader(request, false)))
      if (outcome.status === 'not-found') return notFound(reply, name)
      if (outcome.status === 'full') return tooManyWaiting(reply, outcome.waiting)
      withTicket(reply, outcome.ticket)
      if (outcome.status === 'unavailable') reply.header('retry-after', '1')
      else reply.header('x-fence', String(outcome.fence))
      return reply.code(200).send({ locked: outcome.status === 'locked' })
    },
  )

  app.put<SelectorRoute>(
    '/resource/:name/:selector',
    { config: { lockLevel: LEVELS.write } },
    async (request, reply) => {
      const { name, selector } = request.params
      const unlock = flag('unlock', request.query.unlock, false)
      const ticket = ticketHeader(request, true)
      if (request.body === undefined) throw httpError(400, 'PUT needs a JSON body: the data to store')
      const json = request.body.text
      const outcome = await guarded(() => locks.write(name, selector, ticket, json, { unlock }))
      if (outcome === 'written') return reply.code(204).send()
      return refuse(reply, outcome, name)
    },
  )

  // Unlock: PUT (the Small Resource Server) or POST (the blog post's API).
  const unlock = async (request: FastifyRequest<SelectorRoute>, reply: FastifyReply) => {
    const { name, selector } = request.params
    const outcome = await guarded(() => locks.unlock(name, selector, ticketHeader(request, true)))
    if (outcome === 'unlocked') return { unlocked: true }
    return refuse(reply, outcome, name)
  }
  app.put<SelectorRoute>('/resource/:name/:selector/unlock', { config: { lockLevel: LEVELS.readLock } }, unlock)
  app.post<SelectorRoute>('/resource/:name/:selector/unlock', { config: { lockLevel: LEVELS.readLock } }, unlock)

  return app
}

/** Sets the ticket header as the Small Resource Server does, `X-Ticket` (its PHP client reads it case-sensitively). */
function withTicket(reply: FastifyReply, ticket: string): FastifyReply {
  reply.raw.setHeader('X-Ticket', ticket)
  return reply
}

function tooManyWaiting(reply: FastifyReply, waiting: number): FastifyReply {
  return reply
    .code(503)
    .header('retry-after', '5')
    .send({
      statusCode: 503,
      error: 'Service Unavailable',
      message: `too many tickets waiting for this lock (${waiting})`,
      unavailable: true,
    })
}

function formatOf(request: FastifyRequest<{ Querystring: Record<string, string> }>, fallback: DataFormat): DataFormat {
  const given = request.query.format
  if (given === undefined || given === '') return fallback
  if (given === 'raw' || given === 'envelope') return given
  throw httpError(400, `format must be raw or envelope, got ${JSON.stringify(given)}`)
}

/** A custom store comes with its own storage (`resources`): the lock must be checked in the write's atomic step. */
function customStoreResources(store: Store): never {
  return optionError(
    `resources is required with a custom store (kind '${store.kind}'): pass a ResourceStorage whose write checks the lock (see docs/lock-server.md)`,
  )
}

function checkResources(resources: unknown): void {
  const missing = ['define', 'get', 'delete', 'read', 'write'].filter(
    (m) => typeof (resources as Record<string, unknown> | null)?.[m] !== 'function',
  )
  if (missing.length > 0) {
    optionError(
      `resources must implement ResourceStorage (define, get, delete, read, write); missing ${missing.join(', ')}`,
    )
  }
}

function checkLoggerOption(logger: unknown): LockServerOptions['logger'] {
  const ok = typeof logger === 'boolean' || (typeof logger === 'object' && logger !== null && !Array.isArray(logger))
  if (!ok) {
    optionError(
      `logger must be a boolean, Fastify logger options ({ level: 'warn' }) or a pino-shaped logger, got ${received(logger)}`,
    )
  }
  return adaptLogger(logger) as LockServerOptions['logger']
}

/**
 * A logger shaped as the gate's docs received (`{ warn, info?, error? }`, e.g. `console`) lacks
 * what Fastify asks of a logger instance (every level and `child`): completed, each missing level
 * going to the nearest one it has (or nowhere), so it is accepted as it is elsewhere.
 */
function adaptLogger(logger: unknown): unknown {
  const l = logger as Record<string, unknown> | null
  if (typeof l !== 'object' || l === null || typeof l.warn !== 'function' || isLoggerInstance(l)) return logger
  const call = (level: string) =>
    typeof l[level] === 'function' ? (l[level] as (...a: unknown[]) => void).bind(l) : undefined
  const warn = call('warn')!
  const error = call('error') ?? warn
  const info = call('info') ?? (() => {})
  const adapted: Record<string, unknown> = {
    fatal: call('fatal') ?? error,
    error,
    warn,
    info,
    debug: call('debug') ?? (() => {}),
    trace: call('trace') ?? (() => {}),
    level: 'info',
  }
  adapted.child = () => adapted
  return adapted
}

function isLoggerInstance(logger: unknown): logger is FastifyBaseLogger {
  const l = logger as Record<string, unknown> | null
  return typeof l === 'object' && l !== null && typeof l.info === 'function' && typeof l.child === 'function'
}

/** The presented key: `x-api-key`, or `Authorization: Bearer <key>`. */
function presentedKey(request: FastifyRequest): string | undefined {
  const header = request.headers['x-api-key']
  if (typeof header === 'string' && header !== '') return header
  const auth = request.headers.authorization
  if (typeof auth === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(auth)
    if (match) return match[1]
  }
  return undefined
}

const LEVEL_LABEL: Record<number, string> = { 1: 'READ', 2: 'READ_LOCK', 3: 'WRITE' }

function authorize(keys: ReturnType<typeof keyRing>, request: FastifyRequest, needed: Level): void {
  const presented = presentedKey(request)
  const level = keys.level(presented)
  if (level >= needed) return
  const message =
    presented === undefined
      ? `an API key is required (x-api-key header or Authorization: Bearer); this needs ${LEVEL_LABEL[needed]}`
      : level === LEVELS.none
        ? 'unknown API key'
        : `this needs a ${LEVEL_LABEL[needed]} key; yours grants ${LEVEL_LABEL[level]}`
  throw Object.assign(httpError(401, message), { authenticate: true })
}

function resourceBody(body: unknown): { name: string; timeout: number } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw httpError(400, 'the body must be a JSON object such as {"name":"printer","timeout":300}')
  }
  const fields = body as Record<string, unknown>
  const unknown = Object.keys(fields).filter((k) => k !== 'name' && k !== 'timeout')
  if (unknown.length > 0) throw httpError(400, `unknown field '${unknown[0]}'; a resource has name and timeout`)
  if (fields.name === undefined) throw httpError(400, 'name is required')
  const timeout = fields.timeout === undefined ? DEFAULT_TIMEOUT_S : checkTimeout(fields.timeout)
  return { name: fields.name as string, timeout }
}
