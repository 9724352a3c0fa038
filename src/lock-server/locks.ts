/**
 * The lock service's decisions, framework-free: define/received/delete resources, read, lock, write
 * and unlock selectors. The HTTP layer (`server.ts`) only translates these outcomes into replies.
 *
 * Each (resource, selector) is its own lock: a waiting room of limit 1 whose ttl is the resource's
 * `timeout`. A ticket is the lease token (the room's visitor id): it is the lock while admitted and
 * a place in a fair FIFO line while someone else holds the lock.
 */
import { optionError } from '../base/errors.js'
import { received, inMs, knownKeys, safeName } from '../base/validate.js'
import { queueSettings } from '../core/queue.js'
import { createWaitingRoom, MAX_VISITOR_ID_LENGTH, newVisitorId, type WaitingRoom } from '../core/waiting-room.js'
import type { QueueSettings, Store } from '../stores/types.js'
import { lockSemaphore, type ResourceDefinition, type ResourceStorage } from '../stores/resources.js'

/**
 * How tickets waiting for a lock keep their place in line ({@link QueueSettings}). Defaults:
 * `idleTimeout` 15,000 (a waiting ticket not presented again for this long loses its place; the 202
 * says `Retry-After: 1`), `claimWindow` 5,000 (a freed lock waits this long for the ticket whose
 * turn it is), `maxLength` 10,000 (beyond it a lock request gets `503`), `confirmTimeout` 3,000 (a
 * new ticket that is never presented again, a client that gave up, holds the line this long at most).
 */
export type LockQueueOptions = Partial<
  Pick<QueueSettings, 'idleTimeout' | 'claimWindow' | 'maxLength' | 'confirmTimeout'>
>

/** Default life of a lock when a resource is defined without `timeout` (seconds). */
export const DEFAULT_TIMEOUT_S = 60
/** Longest lock life a resource may define (seconds): one day. */
export const MAX_TIMEOUT_S = 86_400

export type LockOutcome =
  | { status: 'locked'; ticket: string; fence: number; data: string | null }
  | { status: 'unavailable'; ticket: string; position: number | null; waiting: number | null }
  | { status: 'full'; waiting: number }
  | { status: 'not-found' }

/** `conflict`: another holder's lock is live. `forbidden`: the ticket is not a live lock and nobody else holds one. */
export type TicketOutcome<Done extends string> = Done | 'conflict' | 'forbidden' | 'not-found'

const REQUEST_ERROR: unique symbol = Symbol.for('airlock-shield.lock-request-error') as never

/** A request that cannot be served as sent (a bad name, selector, ticket or body): HTTP 400. */
export class LockRequestError extends Error {
  override readonly name = 'LockRequestError'
  /** Brand: recognized across copies of the package. */
  readonly [REQUEST_ERROR] = true
}

/** True for a {@link LockRequestError} (also one from another copy of the package). */
export function isLockRequestError(err: unknown): err is LockRequestError {
  return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[REQUEST_ERROR] === true
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
    throw new LockRequestError(`timeout must be whole seconds from 1 to ${MAX_TIMEOUT_S}, got ${received(value)}`)
  }
  return value
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
  readonly queue: QueueSettings

  constructor(options: ResourceLocksOptions) {
    this.store = options.store
    this.resources = options.resources
    const queue = options.queue ?? {}
    if (queue === null || typeof queue !== 'object') optionError(`queue must be an object, got ${received(queue)}`)
    knownKeys('queue', queue, ['idleTimeout', 'claimWindow', 'maxLength', 'confirmTimeout'])
    this.queue = queueSettings('queue.', queue, {
      order: 'fifo',
      maxLength: 10_000,
      idleTimeout: 15_000,
      claimWindow: 5_000,
      confirmTimeout: ({ idleTimeout }) => Math.min(3_000, idleTimeout),
    })
    if (this.queue.idleTimeout < 3)
      optionError(`queue.idleTimeout must be at least 3 ms, got ${this.queue.idleTimeout}`)
  }

  /** Creates or updates a resource. */
  async define(
    name: string,
    timeout: number = DEFAULT_TIMEOUT_S,
  ): Promise<{ created: boolean; name: string; timeout: number }> {
    checkName('resource name', name)
    checkTimeout(timeout)
    const created = await this.resources.define(name, { timeout })
    return { created, name, timeout }
  }

  /** A resource's definition, or `null`. */
  received(name: string): Promise<ResourceDefinition | null> {
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
   * Locks a selector for `ticket` and reads its data. Without a ticket, the lock is taken if it is
   * free and nobody waits; otherwise the answer carries a new ticket, which takes its place in line
   * when it is presented: tickets nobody comes back for never hold up the line. A ticket that
   * already holds the lock keeps it, extended to a full `timeout` again. A presented ticket that
   * does not hold it takes (or keeps) its place in line and gets the lock in arrival order; a new
   * place is lost after `confirmTimeout` unless the ticket is presented again.
   */
  async lock(name: string, selector: string, ticket?: string): Promise<LockOutcome> {
    checkName('resource name', name)
    checkName('selector', selector)
    const presented = ticket === undefined ? undefined : checkTicket(ticket)
    const definition = await this.resources.get(name)
    if (!definition) return { status: 'not-found' }
    const room = this.room(name, selector, definition)
    if (presented === undefined) {
      const lease = await room.semaphore.acquire()
      if (lease === null) return { status: 'unavailable', ticket: newVisitorId(), position: null, waiting: null }
      return {
        status: 'locked',
        ticket: lease.token,
        fence: lease.fence,
        data: await this.resources.read(name, selector),
      }
    }
    const entered = await room.enter(presented)
    if (entered.status === 'admitted') {
      // A returning holder gets its live slot back unchanged; extend it: coming back is a sign of life.
      await entered.lease.refresh()
      return {
        status: 'locked',
        ticket: presented,
        fence: entered.lease.fence,
        data: await this.resources.read(name, selector),
      }
    }
    if (entered.status === 'queued') {
      return { status: 'unavailable', ticket: presented, position: entered.position, waiting: entered.waiting }
    }
    // No client share is asked for here, so 'client-share' never comes.
    return { status: 'full', waiting: entered.status === 'full' ? entered.waiting : 0 }
  }

  /**
   * Writes a selector's data for the holder of `ticket`: the write lands only while the ticket holds
   * the lock (checked with the write, in one atomic step), then the lock is extended to a full
   * `timeout` again. With `unlock`, the lock is released after the write.
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
    const outcome = await this.resources.write(name, selector, json, {
      semaphore: lockSemaphore(name, selector),
      ticket,
    })
    if (outcome === 'not-found') return 'not-found'
    if (outcome === 'stale') return 'conflict'
    if (outcome === 'not-holder') return this.whyNot(room)
    const lease = room.lease(ticket)
    await (options.unlock ? lease.release() : lease.refresh())
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

  /** Checks a ticket call's arguments; the lock's line, or `null` when the resource is unknown. */
  private async ticketRoom(name: string, selector: string, ticket: string): Promise<WaitingRoom | null> {
    checkName('resource name', name)
    checkName('selector', selector)
    checkTicket(ticket)
    const definition = await this.resources.get(name)
    return definition ? this.room(name, selector, definition) : null
  }

  /** Why a ticket that does not hold the lock was refused: someone else holds it, or nobody does. */
  private async whyNot(room: WaitingRoom): Promise<'conflict' | 'forbidden'> {
    return (await room.getState()).held > 0 ? 'conflict' : 'forbidden'
  }

  private room(name: string, selector: string, definition: ResourceDefinition): WaitingRoom {
    return createWaitingRoom({
      name: lockSemaphore(name, selector),
      limit: 1,
      ttl: inMs(definition.timeout * 1000),
      store: this.store,
      ...this.queue,
    })
  }
}
