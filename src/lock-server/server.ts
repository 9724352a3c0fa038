/**
 * The HTTP lock service: the Small Resource Server API on Fastify, for services in any language.
 * This file only translates HTTP to {@link ResourceLocks} decisions and back.
 */
import { STATUS_CODES } from 'node:http'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify'
import { isAirlockError, optionError } from '../core/errors.js'
import { loadPeer } from '../core/peer.js'
import { describe, knownKeys, positiveInteger } from '../core/validate.js'
import { assertStore } from '../stores/assert.js'
import { defaultStore, MemoryStore } from '../stores/memory.js'
import { RedisStore } from '../stores/redis.js'
import type { Store } from '../stores/types.js'
import { keyRing, LEVELS, type ApiKeys, type KeyRing, type Level } from './keys.js'
import { checkTimeout, DEFAULT_TIMEOUT_S, LockRequestError, ResourceLocks, type LockQueueOptions } from './locks.js'
import { memoryResources, redisResources, type ResourceStorage } from './resources.js'

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
  /** Largest request body in bytes; larger gets `413`. Default 1 MiB. */
  bodyLimit?: number
  /**
   * Request logging: `false` (default), `true` (Fastify's pino logger at `info`), Fastify logger
   * options (`{ level: 'warn' }`), or a pino-shaped logger instance of your own.
   */
  logger?: boolean | FastifyServerOptions['logger'] | FastifyBaseLogger
  /** How tickets waiting for a lock keep their place in line. */
  queue?: LockQueueOptions
}

const OPTION_KEYS = ['store', 'apiKeys', 'resources', 'bodyLimit', 'logger', 'queue'] as const

/** Resource storage per memory store, so a service re-created on the same store finds its data. */
const memoryResourcesByStore = new WeakMap<MemoryStore, ResourceStorage>()

/**
 * Creates the HTTP lock service (a Fastify instance, not yet listening): named resources with
 * selectors, each (resource, selector) its own lock with its own JSON data.
 *
 * | route | key | answers |
 * |---|---|---|
 * | `POST /resource` `{ name, timeout }` | WRITE | `201` created, `200` updated |
 * | `GET /resource/:name` | READ | `200 { name, timeout }`, `404` |
 * | `DELETE /resource/:name` | WRITE | `204`, `404` |
 * | `GET /resource/:name/:selector?lock=1` (`x-ticket` optional) | READ_LOCK | `200` data + `x-ticket`; `202 { unavailable: true }` + `x-ticket` |
 * | `GET /resource/:name/:selector?lock=0` | READ | `200` data |
 * | `PUT /resource/:name/:selector` + `x-ticket` | WRITE | `204`; `409` someone else holds it; `403` not a live lock |
 * | `POST /resource/:name/:selector/unlock` + `x-ticket` | READ_LOCK | `200 { unlocked: true }`; `409`; `403` |
 *
 * Also `401` for a missing, unknown or too weak key, `400` for bad input (with a message), `404`
 * for an unknown resource, `413` for a body over `bodyLimit`, `503` when the store is unavailable.
 * Full reference: `docs/lock-server.md`.
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
    optionError(`createLockServer() needs an options object, got ${describe(options)}`)
  }
  knownKeys('createLockServer()', options, OPTION_KEYS)
  const store = options.store === undefined ? defaultStore() : assertStore(options.store)
  const keys = keyRing(options.apiKeys)
  const resources = options.resources ?? resourcesFor(store)
  checkResources(resources)
  const locks = new ResourceLocks({ store, resources, queue: options.queue })
  const bodyLimit = positiveInteger('bodyLimit', options.bodyLimit ?? 1024 * 1024)

  const fastify = loadPeer<typeof import('fastify').default>('fastify', 'createLockServer()')
  const logger = options.logger ?? false
  const app = fastify({
    bodyLimit,
    ...(isLoggerInstance(logger) ? { loggerInstance: logger } : { logger: logger as FastifyServerOptions['logger'] }),
  }) as unknown as FastifyInstance

  // Any content type is read as JSON (curl -d sends form-urlencoded, fetch text/plain by default);
  // application/json keeps Fastify's own parser, which also refuses prototype poisoning.
  app.removeContentTypeParser('text/plain')
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, body === '' ? undefined : JSON.parse(body as string))
    } catch (err) {
      done(httpError(400, `Body is not valid JSON: ${(err as Error).message}`), undefined)
    }
  })
  app.setErrorHandler((err, request, reply) => sendError(err, request, reply))

  const guard = (needed: Level) => async (request: FastifyRequest) => authorize(keys, request, needed)

  app.get('/health', async () => ({ ok: true }))

  app.post('/resource', { preHandler: guard(LEVELS.write) }, async (request, reply) => {
    const { name, timeout } = resourceBody(request.body)
    const result = await locks.define(name, timeout)
    return reply.code(result.created ? 201 : 200).send({ name: result.name, timeout: result.timeout })
  })

  app.get<{ Params: { name: string } }>('/resource/:name', { preHandler: guard(LEVELS.read) }, async (request, reply) => {
    const definition = await locks.describe(request.params.name)
    if (!definition) return notFound(reply, request.params.name)
    return { name: request.params.name, timeout: definition.timeout }
  })

  app.delete<{ Params: { name: string } }>('/resource/:name', { preHandler: guard(LEVELS.write) }, async (request, reply) => {
    if (!(await locks.delete(request.params.name))) return notFound(reply, request.params.name)
    return reply.code(204).send()
  })

  type SelectorRoute = { Params: { name: string; selector: string }; Querystring: Record<string, string> }

  app.get<SelectorRoute>('/resource/:name/:selector', async (request, reply) => {
    const { name, selector } = request.params
    const lock = flag('lock', request.query.lock, true)
    authorize(keys, request, lock ? LEVELS.readLock : LEVELS.read)
    reply.header('cache-control', 'no-store')
    if (!lock) {
      const read = await locks.read(name, selector)
      if (!read.found) return notFound(reply, name)
      return sendJson(reply, 200, read.data)
    }
    const outcome = await locks.lock(name, selector, ticketHeader(request, false))
    switch (outcome.status) {
      case 'not-found':
        return notFound(reply, name)
      case 'locked':
        return sendJson(reply.header('x-ticket', outcome.ticket), 200, outcome.data)
      case 'unavailable':
        return reply
          .code(202)
          .header('x-ticket', outcome.ticket)
          .header('retry-after', '1')
          .send({ unavailable: true, position: outcome.position, waiting: outcome.waiting })
      case 'full':
        return reply
          .code(503)
          .header('retry-after', '5')
          .send({ statusCode: 503, error: 'Service Unavailable', message: `too many tickets waiting for this lock (${outcome.waiting})`, unavailable: true })
    }
  })

  app.put<SelectorRoute>('/resource/:name/:selector', { preHandler: guard(LEVELS.write) }, async (request, reply) => {
    const { name, selector } = request.params
    const unlock = flag('unlock', request.query.unlock, false)
    const ticket = ticketHeader(request, true)
    if (request.body === undefined) throw httpError(400, 'PUT needs a JSON body: the data to store')
    const outcome = await locks.write(name, selector, ticket, JSON.stringify(request.body), { unlock })
    if (outcome === 'written') return reply.code(204).send()
    return refuse(reply, outcome, name)
  })

  app.post<SelectorRoute>('/resource/:name/:selector/unlock', { preHandler: guard(LEVELS.readLock) }, async (request, reply) => {
    const { name, selector } = request.params
    const outcome = await locks.unlock(name, selector, ticketHeader(request, true))
    if (outcome === 'unlocked') return { unlocked: true }
    return refuse(reply, outcome, name)
  })

  return app
}

/** The storage matching a store: its Redis client for `redisStore`, one memory storage per memory store. */
function resourcesFor(store: Store): ResourceStorage {
  if (store instanceof RedisStore) {
    return redisResources({ client: store.client, prefix: store.prefix, commandTimeout: store.commandTimeout })
  }
  if (store instanceof MemoryStore) {
    let resources = memoryResourcesByStore.get(store)
    if (!resources) {
      resources = memoryResources()
      memoryResourcesByStore.set(store, resources)
    }
    return resources
  }
  return optionError(
    `resources is required with a custom store (kind '${store.kind}'): pass resources: redisResources({ client }) or memoryResources()`,
  )
}

function checkResources(resources: unknown): void {
  const missing = ['define', 'get', 'delete', 'read', 'write'].filter(
    (m) => typeof (resources as Record<string, unknown> | null)?.[m] !== 'function',
  )
  if (missing.length > 0) {
    optionError(`resources must implement ResourceStorage (define, get, delete, read, write); missing ${missing.join(', ')}`)
  }
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

function authorize(keys: KeyRing, request: FastifyRequest, needed: Level): void {
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

/** `?lock=1|0|true|false`; absent means `fallback`. */
function flag(name: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback
  if (value === '1' || value === 'true') return true
  if (value === '0' || value === 'false') return false
  throw httpError(400, `${name} must be 1 or 0, got ${JSON.stringify(value)}`)
}

function ticketHeader(request: FastifyRequest, required: true): string
function ticketHeader(request: FastifyRequest, required: false): string | undefined
function ticketHeader(request: FastifyRequest, required: boolean): string | undefined {
  const value = request.headers['x-ticket']
  if (value === undefined || value === '') {
    if (required) throw httpError(400, 'the x-ticket header is required: send the ticket you got with the lock')
    return undefined
  }
  if (Array.isArray(value)) throw httpError(400, 'send one x-ticket header')
  return value
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

function sendJson(reply: FastifyReply, status: number, json: string | null): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(json ?? 'null')
}

function notFound(reply: FastifyReply, name: string): FastifyReply {
  return reply.code(404).send({ statusCode: 404, error: 'Not Found', message: `no resource named '${name}'` })
}

function refuse(reply: FastifyReply, outcome: 'conflict' | 'forbidden' | 'not-found', name: string): FastifyReply {
  if (outcome === 'not-found') return notFound(reply, name)
  if (outcome === 'conflict') {
    return reply.code(409).send({ statusCode: 409, error: 'Conflict', message: 'another ticket holds this lock' })
  }
  return reply
    .code(403)
    .send({ statusCode: 403, error: 'Forbidden', message: 'this ticket does not hold the lock (expired, released or never issued)' })
}

function httpError(statusCode: number, message: string): Error & { statusCode: number } {
  return Object.assign(new Error(message), { statusCode })
}

function sendError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const e = err as Error & { statusCode?: number; authenticate?: boolean }
  let status: number
  let message: string
  if (isAirlockError(err, 'ERR_AIRLOCK_STORE_UNAVAILABLE')) {
    request.log.warn({ err }, 'lock store unavailable')
    status = 503
    message = 'the lock store is unavailable; retry shortly'
    reply.header('retry-after', '1')
  } else if (err instanceof LockRequestError || isAirlockError(err, 'ERR_AIRLOCK_OPTION')) {
    status = 400
    message = e.message
  } else if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    status = e.statusCode
    message = e.message
    if (e.authenticate) reply.header('www-authenticate', 'Bearer realm="airlock"')
  } else {
    request.log.error({ err }, 'lock service error')
    status = 500
    message = 'internal error'
  }
  return reply.code(status).send({ statusCode: status, error: STATUS_CODES[status], message })
}
