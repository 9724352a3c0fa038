/**
 * The lock service's HTTP details: reading JSON bodies safely, the ticket header, read answers in
 * both shapes, refusals and errors. `server.ts` wires routes to decisions with these.
 */
import { STATUS_CODES } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { isAirlockError } from '../base/errors.js'
import type { StoreGuard } from '../core/guard.js'
import { isLockRequestError } from './locks.js'

/** How reads answer: the Small Resource Server's envelope, or the stored JSON itself. */
export type DataFormat = 'envelope' | 'raw'

/** A request body: the JSON text as sent (what a write stores) and its value. */
export interface JsonBody {
  text: string
  value: unknown
}

/** The deepest nesting a JSON body may have (arrays and objects); deeper is `400`, never a stack overflow. */
export const MAX_JSON_DEPTH = 64

/** True when `text` nests arrays/objects deeper than `max` (a scan without recursion, strings skipped). */
export function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92)
        i++ // backslash: skip the escaped character
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 91 || c === 123) {
      if (++depth > max) return true
    } else if (c === 93 || c === 125) depth--
  }
  return false
}

/** Fastify content-type parser: any body as JSON text, checked for nesting before `JSON.parse`. */
export function jsonBodyParser(
  _request: FastifyRequest,
  body: string | Buffer,
  done: (err: Error | null, body?: JsonBody) => void,
): void {
  const text = (typeof body === 'string' ? body : body.toString('utf8')).trim()
  if (text === '') return done(null, undefined)
  if (nestedDeeperThan(text, MAX_JSON_DEPTH)) {
    return done(httpError(400, `the JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`))
  }
  try {
    done(null, { text, value: JSON.parse(text) })
  } catch (err) {
    done(httpError(400, `Body is not valid JSON: ${(err as Error).message}`))
  }
}

export function httpError(statusCode: number, message: string): Error & { statusCode: number } {
  return Object.assign(new Error(message), { statusCode })
}

/** `?lock=1|0|true|false`; absent means `fallback`. */
export function flag(name: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback
  if (value === '1' || value === 'true') return true
  if (value === '0' || value === 'false') return false
  throw httpError(400, `${name} must be 1 or 0, got ${JSON.stringify(value)}`)
}

/** The presented ticket (`x-ticket`, any case). */
export function ticketHeader(request: FastifyRequest, required: true): string
export function ticketHeader(request: FastifyRequest, required: false): string | undefined
export function ticketHeader(request: FastifyRequest, required: boolean): string | undefined {
  const value = request.headers['x-ticket']
  if (value === undefined || value === '') {
    if (required) throw httpError(400, 'the X-Ticket header is required: send the ticket you got with the lock')
    return undefined
  }
  if (Array.isArray(value)) throw httpError(400, 'send one X-Ticket header')
  return value
}

/**
 * A read: the envelope `{"resource","selector","data":"<JSON as a string>"}` (the Small Resource
 * Server's shape; `"null"` when nothing was written), or the stored JSON itself (`raw`).
 */
export function readAnswer(
  reply: FastifyReply,
  status: number,
  resource: string,
  selector: string,
  json: string | null,
  format: DataFormat,
): FastifyReply {
  const body = format === 'raw' ? (json ?? 'null') : JSON.stringify({ resource, selector, data: json ?? 'null' })
  return reply.code(status).type('application/json; charset=utf-8').send(body)
}

export function notFound(reply: FastifyReply, name: string): FastifyReply {
  return reply.code(404).send({ statusCode: 404, error: 'Not Found', message: `no resource named '${name}'` })
}

export function refuse(
  reply: FastifyReply,
  outcome: 'conflict' | 'forbidden' | 'not-found',
  name: string,
): FastifyReply {
  if (outcome === 'not-found') return notFound(reply, name)
  if (outcome === 'conflict') {
    return reply.code(409).send({ statusCode: 409, error: 'Conflict', message: 'another ticket holds this lock' })
  }
  return reply.code(403).send({
    statusCode: 403,
    error: 'Forbidden',
    message: 'this ticket does not hold the lock (expired, released or never issued)',
  })
}

export function sendError(err: unknown, request: FastifyRequest, reply: FastifyReply, guard: StoreGuard): FastifyReply {
  const e = err as Error & { statusCode?: number; authenticate?: boolean }
  let status: number
  let message: string
  if (isAirlockError(err, 'ERR_AIRLOCK_STORE_UNAVAILABLE')) {
    guard.logFailure(err, `${request.method} ${request.url}: 503`)
    status = 503
    message = 'the lock store is unavailable; retry shortly'
    reply.header('retry-after', '1')
  } else if (isLockRequestError(err) || isAirlockError(err, 'ERR_AIRLOCK_OPTION')) {
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
