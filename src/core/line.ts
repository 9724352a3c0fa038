import type { Store } from '../stores/types.js'
import {
  ADMITTED_JSON,
  queuedJson,
  renderWaitingPage,
  WAITING_PAGE_CSP,
  type WaitingPage,
} from '../pages/waiting.js'
import { optionError } from './errors.js'
import { cookieValues, prefersJson } from './http.js'
import { createSigner, type Signer } from './signing.js'
import { decodeTicket, encodeTicket, TICKET_CONTEXT, TICKET_MAX_LENGTH } from './ticket.js'
import { describe, duration, knownKeys, nonNegativeInteger, oneOf } from './validate.js'
import { createWaitingRoom, type Queued, type WaitingRoom } from './waiting-room.js'

/** The gate's `queue` option: a fair waiting room in front of the site. Durations in ms. */
export interface GateQueueOptions {
  /** `'fifo'` (default): admitted in order of arrival. `'random'`: a lottery among those waiting. */
  order?: 'fifo' | 'random'
  /** The line takes at most this many visitors; beyond it newcomers get the busy answer. 0: no cap. Default 100,000. */
  maxLength?: number
  /** A visitor whose page stopped polling for this long loses its place. Default 30,000. */
  idleTimeout?: number
  /** A freed slot is kept this long for the visitor whose turn it is; one that does not come loses its place. Default 10,000. */
  claimWindow?: number
  /**
   * A new place is lost after this long unless the visitor's page (or client) comes back, so the
   * places of clients that keep no cookies hold up the line for seconds, not `idleTimeout`.
   * Default: 3 x pollInterval, at least 5,000, at most idleTimeout.
   */
  confirmTimeout?: number
  /**
   * How often the waiting page polls while visible (jittered 0.75x..1.25x), and the `Retry-After`
   * of a queued answer. Default 2,000. Must leave room for a poll within `claimWindow` and `idleTimeout`.
   */
  pollInterval?: number
  /** A custom waiting page (a function of the place in line returning HTML). */
  page?: WaitingPage
}

const QUEUE_KEYS = ['order', 'maxLength', 'idleTimeout', 'claimWindow', 'confirmTimeout', 'pollInterval', 'page'] as const

/** Where a queued visitor stands, as the gate reports it (`eta` in seconds). */
export interface LinePlace {
  position: number | null
  waiting: number
  eta: number | null
}

/** The waiting-room part of a gate: the line in the store, tickets, and the queued answers. */
export class GateLine {
  readonly room: WaitingRoom
  readonly order: 'fifo' | 'random'
  readonly pollInterval: number
  /** Hidden tabs poll only this often: enough to keep the place and to claim a reserved slot. */
  readonly keepAliveInterval: number
  readonly ticketCookieName: string
  private readonly signer: Signer
  private readonly page: WaitingPage | undefined
  private readonly jsonHeaders: Readonly<Record<string, string>>
  private readonly htmlHeaders: Readonly<Record<string, string>>
  private readonly pageHeaders: Readonly<Record<string, string>>
  private readonly admittedHeaders: Readonly<Record<string, string>>

  constructor(
    readonly gate: string,
    queue: true | GateQueueOptions,
    settings: { limit: number; ttl: number; store: Store; secrets: readonly string[]; ticketCookieName: string },
  ) {
    const q: GateQueueOptions = queue === true ? {} : queue
    knownKeys('queue', q, QUEUE_KEYS)
    this.order = oneOf('queue.order', q.order ?? 'fifo', ['fifo', 'random'] as const)
    const maxLength = nonNegativeInteger('queue.maxLength', q.maxLength ?? 100_000)
    const idleTimeout = duration('queue.idleTimeout', q.idleTimeout ?? 30_000)
    const claimWindow = duration('queue.claimWindow', q.claimWindow ?? 10_000)
    this.pollInterval = duration('queue.pollInterval', q.pollInterval ?? Math.min(2_000, Math.floor(claimWindow / 3)))
    if (this.pollInterval * 1.25 >= claimWindow || this.pollInterval * 1.25 >= idleTimeout / 2) {
      optionError(
        `queue.pollInterval (${this.pollInterval}) is too long for queue.claimWindow (${claimWindow}) and ` +
          `queue.idleTimeout (${idleTimeout}): a page polls up to 1.25x pollInterval apart, so keep ` +
          `pollInterval below claimWindow / 1.25 and idleTimeout / 2.5`,
      )
    }
    const confirmTimeout = duration(
      'queue.confirmTimeout',
      q.confirmTimeout ?? Math.min(idleTimeout, Math.max(5_000, this.pollInterval * 3)),
    )
    if (confirmTimeout <= this.pollInterval * 1.25 || confirmTimeout > idleTimeout) {
      optionError(
        `queue.confirmTimeout must be above 1.25x pollInterval (${this.pollInterval}) and at most ` +
          `queue.idleTimeout (${idleTimeout}), got ${confirmTimeout}: a new visitor's first poll must come in time`,
      )
    }
    this.keepAliveInterval = Math.max(this.pollInterval, Math.floor(Math.min(claimWindow / 1.25, idleTimeout / 2.5)))
    if (q.page !== undefined && typeof q.page !== 'function') {
      optionError(`queue.page must be a function ({ position, waiting, eta, ... }) => html, got ${describe(q.page)}`)
    }
    this.page = q.page
    this.room = createWaitingRoom({
      name: gate,
      limit: settings.limit,
      ttl: settings.ttl,
      store: settings.store,
      order: this.order,
      maxLength,
      idleTimeout,
      claimWindow,
      confirmTimeout,
    })
    this.ticketCookieName = settings.ticketCookieName
    this.signer = createSigner({ secrets: settings.secrets, context: TICKET_CONTEXT, maxLength: TICKET_MAX_LENGTH })

    const common = {
      'retry-after': String(Math.ceil(this.pollInterval / 1000)),
      'cache-control': 'no-store',
      vary: 'Accept',
    }
    this.jsonHeaders = Object.freeze({ ...common, 'content-type': 'application/json; charset=utf-8' })
    this.htmlHeaders = Object.freeze({ ...common, 'content-type': 'text/html; charset=utf-8' })
    this.pageHeaders = Object.freeze({ ...this.htmlHeaders, 'content-security-policy': WAITING_PAGE_CSP })
    this.admittedHeaders = Object.freeze({
      'cache-control': 'no-store',
      vary: 'Accept',
      'content-type': 'application/json; charset=utf-8',
    })
  }

  /** The visitor id of the first valid ticket of this gate in the `Cookie` header, if any. */
  readTicket(cookieHeader: string | string[] | undefined, now: number): string | undefined {
    for (const value of cookieValues(cookieHeader, this.ticketCookieName)) {
      const id = decodeTicket(this.signer, value, this.gate, now)
      if (id !== null) return id
    }
    return undefined
  }

  /** A signed ticket value for `visitorId`. */
  ticket(visitorId: string, now: number): string {
    return encodeTicket(this.signer, { gate: this.gate, visitorId, issuedAt: now })
  }

  /** The place as answered over HTTP: seconds, and no position in a lottery. */
  place(queued: Queued): LinePlace {
    if (this.order === 'random') return { position: null, waiting: queued.waiting, eta: null }
    return {
      position: queued.position,
      waiting: queued.waiting,
      eta: queued.eta === null ? null : Math.ceil(queued.eta / 1000),
    }
  }

  /** `202` with the waiting page, or JSON when the client prefers it (or is the page polling). */
  queuedResponse(
    place: LinePlace,
    view: { method: string; accept: string | string[] | undefined; poll: boolean; request: unknown },
    nonce: (() => string | undefined) | undefined,
    onPageError: (err: unknown) => void,
  ): { status: number; headers: Readonly<Record<string, string>>; body: string } {
    const head = view.method === 'HEAD'
    if (view.poll || prefersJson(view.accept)) {
      return { status: 202, headers: this.jsonHeaders, body: head ? '' : queuedJson(place.position, place.waiting, place.eta) }
    }
    if (head) return { status: 202, headers: this.htmlHeaders, body: '' }
    const context = {
      order: this.order,
      ...place,
      pollInterval: this.pollInterval,
      keepAliveInterval: this.keepAliveInterval,
      nonce: nonce?.(),
    }
    if (this.page !== undefined) {
      try {
        return { status: 202, headers: this.htmlHeaders, body: String(this.page({ ...context, request: view.request })) }
      } catch (err) {
        onPageError(err)
      }
    }
    return { status: 202, headers: this.pageHeaders, body: renderWaitingPage(context) }
  }

  /** What a polling waiting page gets once admitted (with the pass cookie): it then reloads. */
  admittedResponse(): { status: number; headers: Readonly<Record<string, string>>; body: string } {
    return { status: 200, headers: this.admittedHeaders, body: ADMITTED_JSON }
  }
}
