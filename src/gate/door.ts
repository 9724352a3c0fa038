/**
 * The waiting room's door (`queue.challenge`): before a new visitor gets a slot or a place, its
 * page solves a small proof of work (see challenge.ts), bound to a visitor id the door cookie
 * carries. A visitor without JavaScript is let in once its door cookie is `noscriptDelay` old (its
 * page reloads itself then), at most `noscriptRate` such visitors a second: a slower door, never a
 * dead end, and not a free one for clients that compute nothing. A wrong, forged or replayed solution
 * is refused, or (`failed: 'shadow'`) shown a line that never moves.
 */
import { cookieValues } from '../base/http.js'
import { createSigner, type Signer } from '../base/signing.js'
import { challengeJson, renderChallengePage, CHALLENGE_PAGE_CSP, SOLUTION_HEADER } from '../pages/challenge.js'
import { headAnswer, prefersJson } from '../base/http.js'
import { PageHeaders, SHIELD_HEADER, shieldHeader, type AnswerRequest, type GateResponse } from '../pages/answers.js'
import { PageLanguages } from '../pages/language.js'
import { challengeChannel, type ChallengeEvent } from '../base/events.js'
import { newToken } from '../core/lease.js'
import type { LinePlace } from '../pages/answers.js'
import { Challenges, type ChallengeSettings, type ChallengeVerdict } from './challenge.js'
import { decodeTicket, encodeTicket, TICKET_MAX_LENGTH } from './ticket.js'
import type { BusyDecision, RequestView } from './types.js'

/** What the door needs of the gate to answer. */
export interface DoorContext {
  request: AnswerRequest
  /** A whole `Set-Cookie` value for the door cookie's `value` (the gate's attributes). */
  cookie: (value: string) => string
  busy: (reason: 'challenge-failed') => BusyDecision
  /** The waiting page's answer (`202`) for a place. */
  queued: (place: LinePlace) => GateResponse
}

/** What the door says of a request without a ticket. */
export type DoorStep =
  /** Through: take a place (or a slot) under `visitorId`; `ms` since the door opened for it. */
  | { kind: 'enter'; visitorId: string; via: 'solved' | 'noscript'; ms: number }
  /** Send a challenge for `visitorId`; `setCookie`: the door cookie to set (a new visitor). */
  | { kind: 'challenge'; visitorId: string; setCookie: boolean }
  /** A wrong, forged or replayed solution (`failed: 'refuse'`). */
  | { kind: 'refused'; verdict: ChallengeVerdict }
  /** Shown a line that never moves (`failed: 'shadow'`); `setCookie`: mark the client. */
  | { kind: 'shadow'; visitorId: string; setCookie: boolean }

/** Pressure on the door: new places a second (a decaying average) and the line's length. */
class Pressure {
  /** New places, each counted with a weight that decays over 5 s. */
  private count = 0
  private at = 0
  waiting = 0

  place(now: number): void {
    this.count = this.count * Math.exp(-(now - this.at) / 5_000) + 1
    this.at = now
  }

  /** New places a second over about the last 5 s. */
  perSecond(now: number): number {
    return (this.count * Math.exp(-(now - this.at) / 5_000)) / 5
  }
}

/** The no-JavaScript path's allowance: `rate` a second, ten seconds' worth at most (a token bucket). */
class Allowance {
  private tokens: number
  private at = 0

  constructor(private readonly rate: number) {
    this.tokens = rate * 10
  }

  take(now: number): boolean {
    this.tokens = Math.min(this.rate * 10, this.tokens + ((now - this.at) / 1000) * this.rate)
    this.at = now
    if (this.tokens < 1) return false
    this.tokens -= 1
    return true
  }
}

export class Door {
  readonly challenges: Challenges
  readonly pressure = new Pressure()
  private readonly noscript: Allowance
  private readonly open: Signer
  private readonly shadow: Signer
  private readonly json: Readonly<Record<string, string>>
  private readonly html: PageHeaders

  constructor(
    private readonly gate: string,
    readonly settings: ChallengeSettings,
    secrets: readonly string[],
    /** The door cookie's name. */
    readonly cookieName: string,
    /** The challenge page's languages. */
    private readonly languages: PageLanguages = new PageLanguages(),
  ) {
    this.challenges = new Challenges(gate, secrets, settings)
    this.noscript = new Allowance(settings.noscriptRate)
    this.open = createSigner({ secrets, context: 'airlock-door', maxLength: TICKET_MAX_LENGTH })
    this.shadow = createSigner({ secrets, context: 'airlock-shadow', maxLength: TICKET_MAX_LENGTH })
    const common = { 'cache-control': 'no-store', vary: 'Accept', [SHIELD_HEADER]: shieldHeader('challenge', gate) }
    this.json = Object.freeze({ ...common, 'content-type': 'application/json; charset=utf-8' })
    this.html = new PageHeaders({
      ...common,
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': CHALLENGE_PAGE_CSP,
    })
  }

  /** The door's verdict on a request that carries no valid ticket. */
  private step(
    cookie: string | string[] | undefined,
    solution: string | string[] | undefined,
    newId: () => string,
    now: number,
  ): DoorStep {
    let opened: { visitorId: string; issuedAt: number } | undefined
    for (const value of cookieValues(cookie, this.cookieName)) {
      const shadowed = this.read(this.shadow, value, now)
      if (shadowed) return { kind: 'shadow', visitorId: shadowed.visitorId, setCookie: false }
      opened ??= this.read(this.open, value, now)
    }
    if (opened === undefined) return { kind: 'challenge', visitorId: newId(), setCookie: true }
    const verdict = this.challenges.verify(opened.visitorId, Array.isArray(solution) ? solution[0] : solution, now)
    const ms = now - opened.issuedAt
    if (verdict === 'ok') return { kind: 'enter', visitorId: opened.visitorId, via: 'solved', ms }
    if (verdict === 'missing' || verdict === 'expired') {
      // Waiting was the proof: a page without JavaScript reloads itself after noscriptDelay. So
      // that clients computing nothing cannot flood in this way, at most noscriptRate a second.
      if (verdict === 'missing' && ms >= this.settings.noscriptDelay && this.noscript.take(now))
        return { kind: 'enter', visitorId: opened.visitorId, via: 'noscript', ms }
      return { kind: 'challenge', visitorId: opened.visitorId, setCookie: false }
    }
    if (this.settings.failed === 'shadow') return { kind: 'shadow', visitorId: opened.visitorId, setCookie: true }
    return { kind: 'refused', verdict }
  }

  /**
   * The door's decision for a request that carries no valid ticket: the visitor id to take a place
   * (or a slot) under, or the answer to send: a challenge (`busy`, reason `challenge`, `202` with the
   * page or JSON), a refusal (`challenge-failed`, the busy answer), or the line that never moves
   * (`challenge-failed`, a `202` waiting page at a place that stays put).
   */
  decide(headers: RequestView['headers'], now: number, ctx: DoorContext): string | BusyDecision {
    const step = this.step(headers.cookie, headers[SOLUTION_HEADER], newToken, now)
    switch (step.kind) {
      case 'enter':
        this.pressure.place(now)
        this.publish(step.via, this.difficulty(now), step.ms)
        return step.visitorId
      case 'challenge': {
        const { response, difficulty } = this.answer(step.visitorId, ctx.request, now)
        this.publish('issued', difficulty, 0)
        const setCookie = step.setCookie ? ctx.cookie(this.cookieValue(step.visitorId, now)) : undefined
        return { kind: 'busy', reason: 'challenge', setCookie, response }
      }
      case 'refused':
        this.publish('refused', this.difficulty(now), 0)
        return ctx.busy('challenge-failed')
      case 'shadow': {
        this.publish('shadowed', this.difficulty(now), 0)
        // A place behind the line as it was, kept in the cookie: it never moves.
        const position = step.setCookie
          ? this.pressure.waiting + 1
          : Number(step.visitorId.slice(step.visitorId.lastIndexOf('.') + 1)) || 1
        const setCookie = step.setCookie
          ? ctx.cookie(this.cookieValue(`${step.visitorId}.${position}`, now, true))
          : undefined
        const response = ctx.queued({
          position,
          waiting: Math.max(position, this.pressure.waiting),
          eta: null,
          opensAt: null,
        })
        return { kind: 'busy', reason: 'challenge-failed', setCookie, response }
      }
    }
  }

  private publish(outcome: ChallengeEvent['outcome'], difficulty: number, ms: number): void {
    if (challengeChannel.hasSubscribers)
      challengeChannel.publish({ gate: this.gate, outcome, difficulty, ms } satisfies ChallengeEvent)
  }

  /** The door cookie's value for `visitorId` (`shadow`: marked for the line that never moves). */
  cookieValue(visitorId: string, now: number, shadow = false): string {
    return encodeTicket(shadow ? this.shadow : this.open, { gate: this.gate, visitorId, issuedAt: now })
  }

  /** The challenge for `visitorId`: `202` with the page that solves it, or JSON for API clients. */
  private answer(visitorId: string, r: AnswerRequest, now: number): { response: GateResponse; difficulty: number } {
    const issued = this.challenges.issue(visitorId, now, this.difficulty(now))
    const build = (): GateResponse => {
      if (prefersJson(r.accept))
        return {
          status: 202,
          headers: this.json,
          body: challengeJson(issued.challenge, issued.difficulty, issued.expiresAt),
        }
      const language = this.languages.pick(r.acceptLanguage)
      const body = renderChallengePage(
        { ...issued, noscriptDelay: this.settings.noscriptDelay, nonce: r.nonce() },
        language,
      )
      return { status: 202, headers: this.html.of(language), body }
    }
    const get = build()
    return { response: r.method === 'HEAD' ? headAnswer(get) : get, difficulty: issued.difficulty }
  }

  /** The difficulty a new challenge gets now. */
  difficulty(now: number): number {
    return this.challenges.difficultyFor({ newPerSecond: this.pressure.perSecond(now), waiting: this.pressure.waiting })
  }

  private read(signer: Signer, value: string, now: number): { visitorId: string; issuedAt: number } | undefined {
    const visitorId = decodeTicket(signer, value, this.gate, now)
    if (visitorId === null) return undefined
    const fields = signer.verify(value)
    return { visitorId, issuedAt: parseInt(fields![3]!, 36) }
  }
}
