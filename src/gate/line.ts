import type { Store } from '../stores/types.js'
import { QUEUE_KEYS, queueSettings } from '../core/queue.js'
import { createWaitingRoom, type Queued, type WaitingRoom } from '../core/waiting-room.js'
import { optionError } from '../base/errors.js'
import { cookieValues } from '../base/http.js'
import { createSigner, type Signer } from '../base/signing.js'
import { received, duration, inMs, knownKeys } from '../base/validate.js'
import { LineAnswers, type LinePlace } from '../pages/answers.js'
import type { PageLanguages } from '../pages/language.js'
import { encodeTicket, readTicketValue, TICKET_CONTEXT, TICKET_MAX_LENGTH, type TicketFields } from './ticket.js'
import type { Opening } from './live-control.js'
import { challengeSettings } from './challenge.js'
import type { GateQueueOptions } from './option-types.js'
import { Door } from './door.js'

export type { LinePlace } from '../pages/answers.js'
export type { GateQueueOptions } from './option-types.js'

/** The waiting-room part of a gate: the line in the store, tickets, and the queued answers. */
export class GateLine {
  readonly room: WaitingRoom
  readonly order: 'fifo' | 'random'
  readonly pollInterval: number
  /** Hidden tabs poll only this often: enough to keep the place and to claim a reserved slot. */
  readonly keepAliveInterval: number
  readonly ticketCookieName: string
  /** The `202` answers and the admitted poll's answer. */
  readonly answers: LineAnswers
  /** The proof-of-work door (`challenge`), if any. */
  readonly door: Door | undefined
  private readonly signer: Signer

  constructor(
    readonly gate: string,
    queue: true | GateQueueOptions,
    settings: {
      limit: number | (() => number)
      admissionRate: () => number | null
      ttl: number
      store: Store
      secrets: readonly string[]
      ticketCookieName: string
      onPageError: (err: unknown) => void
      /** The built-in pages' languages. */
      languages?: PageLanguages
      /** How long an admitted page may wait on a hidden tab, its pass confirmed (ms); `undefined`: it goes at once. */
      hold?: number | undefined
    },
  ) {
    const q: GateQueueOptions = queue === true ? {} : queue
    knownKeys('queue', q, [...QUEUE_KEYS, 'pollInterval', 'page', 'challenge'])
    // The page's poll: a third of the claim window, at most 2 s, unless given.
    const pollFor = (claimWindow: number): number =>
      duration('queue.pollInterval', q.pollInterval ?? Math.min(2_000, Math.floor(claimWindow / 3)))
    const line = queueSettings('queue.', q, {
      order: 'fifo',
      maxLength: 100_000,
      idleTimeout: 30_000,
      claimWindow: 10_000,
      confirmTimeout: ({ idleTimeout, claimWindow }) =>
        Math.min(idleTimeout, Math.max(5_000, pollFor(claimWindow) * 3)),
    })
    const { idleTimeout, claimWindow, confirmTimeout } = line
    this.order = line.order
    this.pollInterval = pollFor(claimWindow)
    if (this.pollInterval * 1.25 >= claimWindow || this.pollInterval * 1.25 >= idleTimeout / 2) {
      optionError(
        `queue.pollInterval (${this.pollInterval}) is too long for queue.claimWindow (${claimWindow}) and ` +
          `queue.idleTimeout (${idleTimeout}): a page polls up to 1.25x pollInterval apart, so keep ` +
          `pollInterval below claimWindow / 1.25 and idleTimeout / 2.5`,
      )
    }
    if (confirmTimeout <= this.pollInterval * 1.25) {
      optionError(
        `queue.confirmTimeout must be above 1.25x pollInterval (${this.pollInterval}) and at most ` +
          `queue.idleTimeout (${idleTimeout}), got ${confirmTimeout}: a new visitor's first poll must come in time`,
      )
    }
    this.keepAliveInterval = Math.max(this.pollInterval, Math.floor(Math.min(claimWindow / 1.25, idleTimeout / 2.5)))
    if (q.page !== undefined && typeof q.page !== 'function') {
      optionError(`queue.page must be a function ({ position, waiting, eta, ... }) => html, got ${received(q.page)}`)
    }
    this.answers = new LineAnswers(
      {
        gate,
        order: this.order,
        pollInterval: this.pollInterval,
        keepAliveInterval: this.keepAliveInterval,
        hold: settings.hold,
      },
      q.page,
      settings.onPageError,
      settings.languages,
    )
    this.room = createWaitingRoom({
      name: gate,
      limit: settings.limit,
      admissionRate: settings.admissionRate,
      ttl: inMs(settings.ttl),
      store: settings.store,
      ...line,
    })
    this.ticketCookieName = settings.ticketCookieName
    this.signer = createSigner({ secrets: settings.secrets, context: TICKET_CONTEXT, maxLength: TICKET_MAX_LENGTH })
    const challenge = challengeSettings(q.challenge)
    this.door =
      challenge && new Door(gate, challenge, settings.secrets, `${settings.ticketCookieName}_door`, settings.languages)
  }

  /** The first valid ticket of this gate in the `Cookie` header (its visitor id, when it was issued), if any. */
  readTicket(cookieHeader: string | string[] | undefined, now: number): TicketFields | undefined {
    for (const value of cookieValues(cookieHeader, this.ticketCookieName)) {
      const ticket = readTicketValue(this.signer, value, this.gate, now)
      if (ticket !== null) return ticket
    }
    return undefined
  }

  /** A signed ticket value for `visitorId`. */
  ticket(visitorId: string, now: number): string {
    return encodeTicket(this.signer, { gate: this.gate, visitorId, issuedAt: now })
  }

  /**
   * The place as answered over HTTP: seconds, and no position in a lottery nor before a scheduled
   * opening (the pre-queue is drawn at random then; `eta` counts down to it, `opensAt` is the time
   * the operator set).
   */
  place(queued: Queued, opening: Opening | null = null): LinePlace {
    if (opening !== null)
      return {
        position: null,
        waiting: queued.waiting,
        eta: Math.max(0, Math.ceil(opening.in / 1000)),
        opensAt: opening.at,
      }
    if (this.order === 'random') return { position: null, waiting: queued.waiting, eta: null, opensAt: null }
    return {
      position: queued.position,
      waiting: queued.waiting,
      eta: queued.eta === null ? null : Math.ceil(queued.eta / 1000),
      opensAt: null,
    }
  }
}
