/**
 * The lock service's decisions, framework-free: define/describe/delete resources, read, lock, write
 * and unlock selectors. The HTTP layer (`server.ts`) only translates these outcomes into replies.
 *
 * Each (resource, selector) is its own lock: a waiting room of limit 1 whose ttl is the resource's
 * `timeout`. A ticket is the lease token (the room's visitor id): it is the lock while admitted and
 * a place in a fair FIFO line while someone else holds the lock.
 */
import { createHash } from 'node:crypto'
import { optionError } from '../core/errors.js'
import { describe, duration, knownKeys, nonNegativeInteger, safeName } from '../core/validate.js'
import { createWaitingRoom, MAX_VISITOR_ID_LENGTH, newVisitorId, type WaitingRoom } from '../core/waiting-room.js'
import type { Store } from '../stores/types.js'
import type { ResourceDefinition, ResourceStorage } from './resources.js'

/** How tickets waiting for a lock keep their place (see {@link LockQueueOptions}). */
export interface LockQueueOptions {
  /**
   * A waiting ticket not presented again (`GET ...?lock=1` with `x-ticket`) for this long loses its
   * place. Default 15,000 ms. Clients should retry well within it (the 202 says `Retry-After: 1`).
   */
  idleTimeout?: number
  /**
   * When a lock is freed, it is reserved this long for the ticket at the head of the line; a head
   * that does not come back in time is skipped. Default 5,000 ms.
   */
  claimWindow?: number
  /** Most tickets waiting for one lock; beyond it a lock request gets `503`. 0: no cap. Default 10,000. */
  maxLength?: number
}

/** Default life of a lock when a resource is defined without `timeout` (seconds). */
export const DEFAULT_TIMEOUT_S = 60
/** Longest lock life a resource may define (seconds): one day. */
export const MAX_TIMEOUT_S = 86_400

export type LockOutcome =
  | { status: 'locked'; ticket: string; data: string | null }
  | { status: 'unavailable'; ticket: string; position: number; waiting: number }
  | { status: 'full'; waiting: number }
  | { status: 'not-found' }

/** `conflict`: another holder's lock is live. `forbidden`: the ticket is not a live lock and nobody else holds one. */
export type TicketOutcome<Done extends string> = Done | 'conflict' | 'forbidden' | 'not-found'

/** A request that cannot be served as sent (a bad name, selector, ticket or body): HTTP 400. */
export class LockRequestError extends Error {
  override readonly name = 'LockRequestError'
}

const TICKET = /^[A-Za-z0-9._:~-]+$/

/** Checks a resource name or a selector: 1 to 64 of letters, digits, `.`, `_`, `:` or `-`. */
export function checkName(what: 'resource name' | 'selector', value: unknown): string {
  try {
    return safeName(what, value)
  } catch (err) {
    throw new LockRequestError((err as Error).message)
  }
}

/** Checks an `x-ticket` value as sent by a client. */
export function checkTicket(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_VISITOR_ID_LENGTH || !TICKET.test(value)) {
    throw new LockRequestError(
      `x-ticket must be a ticket as this service issued it (1 to ${MAX_VISITOR_ID_LENGTH} of letters, digits, '.', '_', ':', '~' or '-')`,
    )
  }
  return value
}

/** Checks a resource's `timeout` (whole seconds, 1 to 86,400). */
export function checkTimeout(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > MAX_TIMEOUT_S) {
    throw new LockRequestError(`timeout must be whole seconds from 1 to ${MAX_TIMEOUT_S}, got ${describe(value)}`)
  }
  return value
}

/**
 * The semaphore name of one (resource, selector) lock. Names and selectors may both contain `:`,
 * so joining them would be ambiguous (`a:b` + `c` vs `a` + `b:c`); a digest of the pair is not,
 * and always fits the 64-character name limit.
 */
export function lockName(resource: string, selector: string): string {
  return 'lock.' + createHash('sha256').update(`${resource}\n${selector}`).digest('base64url').slice(0, 32)
}

export interface ResourceLocksOptions {
  store: Store
  resources: ResourceStorage
  queue?: LockQueueOptions
}

/** The lock service's decisions over a semaphore store and a resource storage. */
export class ResourceLocks {
  readonly store: Store
  readonly resources: ResourceStorage
  readonly idleTimeout: number
  readonly claimWindow: number
  readonly maxLength: number

  constructor(options: ResourceLocksOptions) {
    this.store = options.store
    this.resources = options.resources
    const queue = options.queue ?? {}
    if (queue === null || typeof queue !== 'object') optionError(`queue must be an object, got ${describe(queue)}`)
    knownKeys('queue', queue, ['idleTimeout', 'claimWindow', 'maxLength'])
    this.idleTimeout = duration('queue.idleTimeout', queue.idleTimeout ?? 15_000)
    this.claimWindow = duration('queue.claimWindow', queue.claimWindow ?? 5_000)
    this.maxLength = nonNegativeInteger('queue.maxLength', queue.maxLength ?? 10_000)
    if (this.idleTimeout < 3) optionError(`queue.idleTimeout must be at least 3 ms, got ${this.idleTimeout}`)
  }

  /** Creates or updates a resource. */
  async define(name: string, timeout: number = DEFAULT_TIMEOUT_S): Promise<{ created: boolean; name: string; timeout: number }> {
    checkName('resource name', name)
    checkTimeout(timeout)
    const created = await this.resources.define(name, { timeout })
    return { created, name, timeout }
  }

  /** A resource's definition, or `null`. */
  describe(name: string): Promise<ResourceDefinition | null> {
    return this.resources.get(checkName('resource name', name))
  }

  /** Deletes a resource and its data. Live locks on its selectors expire by their ttl. */
  delete(name: string): Promise<boolean> {
    return this.resources.delete(checkName('resource name', name))
  }

  /** Reads a selector's data without locking. */
  async read(name: string, selector: string): Promise<{ found: false } | { found: true; data: string | null }> {
    checkName('resource name', name)
    checkName('selector', selector)
    if (!(await this.resources.get(name))) return { found: false }
    return { found: true, data: await this.resources.read(name, selector) }
  }

  /**
   * Locks a selector for `ticket` (a new ticket when none is given) and reads its data. A ticket
   * that already holds the lock keeps it, extended to a full `timeout` again. When someone else
   * holds it, the ticket takes (or keeps) its place in line: presented again after the holder
   * unlocks, it gets the lock in arrival order.
   */
  async lock(name: string, selector: string, ticket?: string): Promise<LockOutcome> {
    checkName('resource name', name)
    checkName('selector', selector)
    const presented = ticket === undefined ? undefined : checkTicket(ticket)
    const definition = await this.resources.get(name)
    if (!definition) return { status: 'not-found' }
    const room = this.room(name, selector, definition)
    const token = presented ?? newVisitorId()
    const entered = await room.enter(token)
    if (entered.status === 'admitted') {
      // A returning holder gets its live slot back unchanged; extend it: coming back is a sign of life.
      if (presented !== undefined) await entered.lease.refresh()
      return { status: 'locked', ticket: token, data: await this.resources.read(name, selector) }
    }
    if (entered.status === 'queued') {
      return { status: 'unavailable', ticket: token, position: entered.position, waiting: entered.waiting }
    }
    return { status: 'full', waiting: entered.waiting }
  }

  /** Checks a ticket call's arguments; the lock's line, or `null` when the resource is unknown. */
  private async ticketRoom(name: string, selector: string, ticket: string): Promise<WaitingRoom | null> {
    checkName('resource name', name)
    checkName('selector', selector)
    checkTicket(ticket)
    const definition = await this.resources.get(name)
    return definition ? this.room(name, selector, definition) : null
  }

  /**
   * Writes a selector's data for the holder of `ticket`: the lock is refreshed first (which
   * succeeds only while the ticket holds it, and then guarantees a full `timeout` of ownership), then
   * the data is written. With `unlock`, the lock is released after the write.
   */
  async write(
    name: string,
    selector: string,
    ticket: string,
    json: string,
    options: { unlock?: boolean } = {},
  ): Promise<TicketOutcome<'written'>> {
    const room = await this.ticketRoom(name, selector, ticket)
    if (room === null) return 'not-found'
    const lease = room.lease(ticket)
    if (!(await lease.refresh())) return this.whyNot(room)
    if (!(await this.resources.write(name, selector, json))) return 'not-found'
    if (options.unlock) await lease.release()
    return 'written'
  }

  /**
   * Releases the lock held by `ticket`. A ticket that was only waiting in line gives up its place
   * (and is answered as not holding the lock).
   */
  async unlock(name: string, selector: string, ticket: string): Promise<TicketOutcome<'unlocked'>> {
    const room = await this.ticketRoom(name, selector, ticket)
    if (room === null) return 'not-found'
    if (await room.lease(ticket).release()) return 'unlocked'
    await room.leave(ticket)
    return this.whyNot(room)
  }

  /** Why a ticket that does not hold the lock was refused: someone else holds it, or nobody does. */
  private async whyNot(room: WaitingRoom): Promise<'conflict' | 'forbidden'> {
    return (await room.getState()).held > 0 ? 'conflict' : 'forbidden'
  }

  private room(name: string, selector: string, definition: ResourceDefinition): WaitingRoom {
    return createWaitingRoom({
      name: lockName(name, selector),
      limit: 1,
      ttl: definition.timeout * 1000,
      store: this.store,
      order: 'fifo',
      maxLength: this.maxLength,
      idleTimeout: this.idleTimeout,
      claimWindow: this.claimWindow,
    })
  }
}
