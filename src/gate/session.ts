/**
 * Session mode's decision flow: a pass holder is let in (from the verified cache, synchronously, or
 * re-checked against the store); a newcomer gets a slot and a provisional pass, or with a `queue`
 * goes through the door (`queue.challenge`) into the waiting room's line; else busy.
 */
import { newVisitorId, type EnterResult } from '../core/waiting-room.js'
import type { Semaphore } from '../core/semaphore.js'
import { firstCookie, prefersJson } from '../base/http.js'
import { SHIELD_HEADER, shieldHeader, type GateResponse } from '../pages/answers.js'
import { queueChannel, type QueueEvent } from '../base/events.js'
import { GateLine } from './line.js'
import type { Newcomers } from './live-control.js'
import { CONFIRM_LINK, releaseLateEntry, releaseLateTry } from './decisions.js'
import { clientShareKey, shareFor } from './client-share.js'
import { proxiedClient } from '../base/client-address.js'
import { warnOnce } from '../base/errors.js'
import type { DoorContext } from './door.js'
import type { ClientShare } from '../stores/types.js'
import type { Passes } from './passes.js'
import { Flow, type GateParts } from './flow.js'
import type { AdmitDecision, GateDecision, RequestView } from './types.js'
import { LEAVE_QUERY } from '../pages/left.js'
import { pathOf } from './bypass.js'

/** "Leave the line" sent from another site: refused (`403`). */
function crossSite(gate: string): GateResponse {
  return Object.freeze({
    status: 403,
    headers: Object.freeze({
      'content-type': 'text/plain; charset=utf-8',
      'cache-control': 'no-store',
      [SHIELD_HEADER]: shieldHeader('refused', gate, 'cross-site'),
    }),
    body: 'Leaving the line is only possible from this site.\n',
  })
}

/** Whether a request comes from the site itself: `Sec-Fetch-Site` when the browser sends it, else `Origin` against `Host`. */
function sameSite(headers: RequestView['headers']): boolean {
  const site = headers['sec-fetch-site']
  if (site !== undefined) return site === 'same-origin' || site === 'none'
  const origin = headers.origin
  if (origin === undefined) return true
  try {
    return typeof origin === 'string' && new URL(origin).host === headers.host
  } catch {
    return false
  }
}

export class SessionFlow<Req> extends Flow<Req> {
  /** The waiting room (`queue`). */
  private readonly line: GateLine | undefined
  /** `<pass cookie>=`, made once: the pass is looked for on every request. */
  private readonly passKey: string

  constructor(
    parts: GateParts<Req>,
    private readonly passes: Passes,
  ) {
    super(parts)
    this.passKey = `${parts.s.cookie.name}=`
    const s = parts.s
    this.line =
      s.queue === undefined
        ? undefined
        : new GateLine(s.name, s.queue, {
            limit: parts.liveLimit,
            admissionRate: parts.admissionRate,
            ttl: s.provisionalTtl,
            store: s.store,
            secrets: s.secrets,
            ticketCookieName: s.ticketCookieName,
            onPageError: parts.answers.pageError('queue.page'),
            languages: s.languages,
            // Admitted in a hidden tab, the page confirms its pass (it then lives passTtl) and may wait half of it.
            hold: s.confirm ? Math.floor(s.passTtl / 2) : undefined,
          })
  }

  override decide(view: RequestView<Req>): GateDecision | Promise<GateDecision> {
    if (this.line !== undefined && view.method === 'POST' && view.url.endsWith(LEAVE_QUERY))
      return this.leave(this.line, view)
    const value = firstCookie(view.headers.cookie, this.s.cookie.name, this.passKey)
    if (value !== undefined) {
      const cached = this.passes.cached(value, Date.now())
      if (cached !== undefined) return cached
    }
    return this.decideSession(view, value !== undefined)
  }

  private async decideSession(view: RequestView<Req>, hasCookie: boolean): Promise<GateDecision> {
    const deadline = Date.now() + this.s.storeTimeout
    if (hasCookie) {
      const outcome = await this.passes.check(view.headers.cookie, view.secure, deadline)
      if (typeof outcome === 'object') return 'error' in outcome ? this.storeFailed(view, outcome.error, true) : outcome
    }
    const newcomers = this.control.newcomers(Date.now())
    if (newcomers.kind === 'normal' && this.loss.quarantined(Date.now())) return this.storeFailed(view, undefined)
    const client = this.clientOf(view)
    if (this.line !== undefined) return this.joinLine(this.line, view, deadline, newcomers, client)
    return newcomers.kind === 'normal' ? this.admitVisitor(view, deadline, client) : this.busy(view, 'closed')
  }

  /**
   * "Leave the line" (`POST ?__airlock=leave`, the waiting page's form): the place is freed at once
   * (those behind move up), the ticket cleared, and a page with a way back in; a poll already on its
   * way takes no new place (`keepOut`: it is answered as left too). Only from the site
   * itself: a cross-site POST (`Sec-Fetch-Site`, else `Origin` against `Host`) is refused, so another
   * site cannot throw a visitor out of the line.
   */
  private async leave(line: GateLine, view: RequestView<Req>): Promise<GateDecision> {
    if (!sameSite(view.headers))
      return { kind: 'bypass', setCookie: undefined, response: (this.crossSite ??= crossSite(this.s.name)) }
    const visitorId = line.readTicket(view.headers.cookie, Date.now())?.visitorId
    if (visitorId !== undefined) {
      try {
        if (await this.call(() => line.room.leave(visitorId, { keepOut: true }), Date.now() + this.s.storeTimeout))
          this.tally.abandoned(1)
      } catch (err) {
        // The place lapses by itself after idleTimeout without polls; the visitor is told they left.
        this.guard.logFailure(err, 'leave the line')
      }
    }
    return this.leftAnswer(line, view)
  }

  /** The visitor left the line: the page (or `{"status":"left"}`) with a way back in, and the ticket cleared. */
  private leftAnswer(line: GateLine, view: RequestView<Req>): GateDecision {
    const response = line.answers.left(this.answers.request(view), pathOf(view.url))
    return {
      kind: 'bypass',
      setCookie: `${line.ticketCookieName}=${this.passes.secureTail(this.s.cookie.clearTail, view.secure)}`,
      response,
    }
  }

  /** The store's share request for the request's client (`clientShare`), if any. */
  private clientOf(view: RequestView<Req>): ClientShare | undefined {
    const { clientShare: share, clientKey } = this.s
    if (share && !clientKey && !this.toldOfProxy) this.proxyUntrusted(view)
    const key =
      share && clientShareKey(clientKey && this.answers.userCall('clientKey', clientKey, view.request), view.ip)
    return key ? shareFor(share!, key, this.limit.value) : undefined
  }

  /** The cross-site "Leave the line" refusal, made once. */
  private crossSite: GateResponse | undefined

  /** Whether the warning that a proxy's visitors all count as one client was given. */
  private toldOfProxy = false

  /** Says once, loudly, that the gate sees a proxy's address for every visitor (trust is off). */
  private proxyUntrusted(view: RequestView<Req>): void {
    const named = proxiedClient(view.ip, view.headers['x-forwarded-for'])
    if (named === undefined) return
    this.toldOfProxy = true
    const message =
      `airlock-shield: gate '${this.s.name}' is told every visitor is ${view.ip}, a proxy (its X-Forwarded-For names ${named}): ` +
      `all its visitors count as one client, and clientShare refuses them together long before the site is full. ` +
      `Trust the proxy: Fastify({ trustProxy: '${view.ip}' }), Express app.set('trust proxy', 'loopback'), ` +
      `Hono/fetch trustProxy, airlock proxy --trust-proxy ${view.ip} (or set clientKey, or clientShare: false).`
    this.s.logger.warn({ gate: this.s.name, proxy: view.ip, forwardedFor: named }, message)
    warnOnce('AIRLOCK_PROXY_UNTRUSTED', message)
  }

  /** A visitor without a valid pass: a provisional slot and pass if one is free (and its client within its share), else busy. */
  private async admitVisitor(
    view: RequestView<Req>,
    deadline: number,
    client: ClientShare | undefined,
  ): Promise<GateDecision> {
    const t0 = Date.now()
    let got: Awaited<ReturnType<Semaphore['tryAcquire']>>
    try {
      got = await this.call(() => this.sem.tryAcquire({ client }), deadline, releaseLateTry)
    } catch (err) {
      return this.storeFailed(view, err)
    }
    this.tally.ended(got.ended)
    const lease = got.lease
    if (lease === null && got.refused === 'client-share') return this.busy(view, 'client-share')
    if (lease === null || !this.quota.keeps(lease, this.releaseError)) return this.full(view)
    return this.admitWithPass(view, lease.token, 'slot', t0, undefined)
  }

  /**
   * Admitted to the slot `token` with a new provisional pass. A browser's page (a GET that prefers
   * HTML) also gets the `Link` to the confirm request, so the pass is confirmed even if the page
   * makes no other request.
   */
  private admitWithPass(
    view: RequestView<Req>,
    token: string,
    reason: 'slot' | 'line',
    issuedAt: number,
    response: GateResponse | undefined,
  ): AdmitDecision {
    const page = response === undefined && this.s.confirm && view.method === 'GET' && !prefersJson(view.headers.accept)
    this.quota.passGiven(issuedAt)
    return {
      kind: 'admit',
      reason,
      token,
      setCookie: this.passes.issue(token, issuedAt, view.secure),
      headers: page ? CONFIRM_LINK : undefined,
      response,
      slot: undefined,
    }
  }

  /**
   * With a `queue`: enters the line under the ticket's visitor id (or a new one). Admitted (the
   * line was empty and a slot free, or the visitor's turn came): a provisional pass bound to a slot
   * whose token is the visitor id. Queued: `202` and, for a new visitor, the ticket cookie.
   */
  private async joinLine(
    line: GateLine,
    view: RequestView<Req>,
    deadline: number,
    newcomers: Newcomers,
    client: ClientShare | undefined,
  ): Promise<GateDecision> {
    const t0 = Date.now()
    const ticket = line.readTicket(view.headers.cookie, t0)
    const ticketId = ticket?.visitorId
    const fresh = ticketId === undefined
    // Closed: nobody new in line; those in it keep their places (held) for the reopening.
    if (newcomers.kind === 'closed' && fresh) return this.busy(view, 'closed')
    // The proof-of-work door (`queue.challenge`) before a new place: a visitor id, or its answer.
    const door = fresh ? line.door?.decide(view.headers, t0, this.doorContext(line, view)) : undefined
    if (typeof door === 'object') return door
    const visitorId = ticketId ?? door ?? newVisitorId()
    const hold = newcomers.kind !== 'normal'
    const opening = newcomers.kind === 'hold' ? newcomers.opening : null
    let result: EnterResult
    try {
      // A new visitor admitted after the budget ran out never learns it: free that slot again.
      const enter = { fresh, hold, shuffle: opening !== null, client }
      result = await this.call(() => line.room.enter(visitorId, enter), deadline, fresh ? releaseLateEntry : undefined)
    } catch (err) {
      // A held line (queue-all, a scheduled opening) lets nobody in, whatever onStoreError says.
      if (!hold) return this.storeFailed(view, err)
      this.guard.logFailure(err, 'the line is held: busy')
      return this.busy(view, 'store-unavailable')
    }
    this.tally.ended(result.ended)
    if (result.status === 'full') {
      this.queueEvent('full', null, result.waiting)
      return this.busy(view, 'full')
    }
    if (result.status === 'client-share') return this.busy(view, 'client-share')
    // Left the line a moment ago (a poll on its way when the form was sent): no new place; it left.
    if (result.status === 'left') return this.leftAnswer(line, view)
    const poll = view.headers['x-airlock-poll'] !== undefined
    if (result.status === 'queued') {
      const place = line.place(result, opening)
      if (line.door) line.door.pressure.waiting = place.waiting // the line's length raises the door's difficulty
      this.queueEvent(ticketId === undefined ? 'enter' : 'wait', place.position, place.waiting)
      const cookie = `${line.ticketCookieName}=${line.ticket(visitorId, t0)}${this.passes.secureTail(this.s.cookie.tail, view.secure)}`
      return {
        kind: 'queued',
        ...place,
        setCookie: ticketId === undefined ? cookie : undefined,
        response: line.answers.queued(place, this.answers.request(view), poll),
      }
    }
    // The ticket stays: it names the visitor in this gate's line, and a place only exists in the store.
    // Its wait: the store's (from taking the place), else the ticket's age (from the first 202).
    if (ticket !== undefined) this.tally.admitted('line', result.waited ?? Math.max(0, Date.now() - ticket.issuedAt))
    const response = poll ? line.answers.admitted() : undefined
    return this.admitWithPass(view, visitorId, ticketId === undefined ? 'slot' : 'line', t0, response)
  }

  private doorContext(line: GateLine, view: RequestView<Req>): DoorContext {
    const request = this.answers.request(view)
    const tail = this.passes.secureTail(this.s.cookie.tail, view.secure)
    const poll = view.headers['x-airlock-poll'] !== undefined
    return {
      request,
      cookie: (v) => `${line.door!.cookieName}=${v}${tail}`,
      busy: (r) => this.busy(view, r),
      queued: (p) => line.answers.queued(p, request, poll),
    }
  }

  private queueEvent(event: QueueEvent['event'], position: number | null, waiting: number | null): void {
    if (queueChannel.hasSubscribers)
      queueChannel.publish({ gate: this.s.name, event, position, waiting, waitMs: null, count: 1 } satisfies QueueEvent)
  }
}
