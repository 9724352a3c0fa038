/**
 * The gate's own HTTP answers, built beside the pages they carry: busy (`503`), queued (`202`),
 * admitted (the waiting page's poll), and the confirm request (`204`). JSON or HTML by `Accept`;
 * `HEAD` gets the headers (and `Content-Length`) the `GET` would get.
 */
import { asksProblem, headAnswer, prefersJson } from '../base/http.js'
import { busyProblem, PROBLEM_TYPE, queuedProblem } from './problem.js'
import { BUSY_PAGE_CSP, busyJson, busyPageDelay, renderBusyPage, type BusySettings } from './busy.js'
import { PageLanguages, type PageLanguage } from './language.js'
import { LEFT_JSON, LEFT_PAGE_CSP, renderLeftPage } from './left.js'
import { admittedJson, queuedJson, renderWaitingPage, WAITING_PAGE_CSP, type WaitingPage } from './waiting.js'

/** A response the gate gives instead of the route (busy, queued, ...). */
export interface GateResponse {
  status: number
  /** Lower-case names. Shared between responses: never mutate. */
  headers: Readonly<Record<string, string>>
  /**
   * For `HEAD` too, the body of the `GET` answer, with its length in `content-length`: send it as
   * for a `GET` (Node's `http` never sends a body in answer to `HEAD`; Fastify sizes its derived
   * `HEAD` routes by it).
   */
  body: string
}

/** What an answer needs to know of the request. */
export interface AnswerRequest {
  method: string
  accept: string | string[] | undefined
  /** Its `Accept-Language`: read only when a built-in page is rendered. */
  acceptLanguage: string | string[] | undefined
  /** The framework's request, handed to custom pages. */
  request: unknown
  /** The CSP nonce for this request, asked only when a page is rendered. */
  nonce: () => string | undefined
}

const JSON_TYPE = 'application/json; charset=utf-8'
const HTML_TYPE = 'text/html; charset=utf-8'

/**
 * The response header every answer of the shield carries (never the route's): `Airlock: busy;
 * reason=client-share; gate=shop`. Its first word is the kind of answer (`busy`, `queued`,
 * `challenge`, `admitted`, `confirmed`, `left`, `refused`; the proxy's `origin-error`), then
 * RFC 8941 parameters: the busy answer's `reason` (as its JSON's) and the gate's name. A load
 * tester, an access log (nginx's `$upstream_http_airlock`) or a monitor tells the shield's `503`
 * from the origin's by it.
 */
export const SHIELD_HEADER = 'airlock'

/** Why the gate sent its busy answer (`BusyDecision.reason` but the challenge, which has its own answer). */
export type BusyReason = 'full' | 'store-unavailable' | 'closed' | 'client-share' | 'challenge-failed'

/** The {@link SHIELD_HEADER}'s value: `kind`, then `reason` if any, then `gate` (a token, else a quoted string). */
export function shieldHeader(kind: string, gate: string, reason?: string): string {
  const name = /^[A-Za-z*][A-Za-z0-9._:*/-]*$/.test(gate) ? gate : JSON.stringify(gate)
  return reason === undefined ? `${kind}; gate=${name}` : `${kind}; reason=${reason}; gate=${name}`
}

/** The confirm request's answer (`204`): no content, never cached. */
export function confirmedAnswer(gate: string): GateResponse {
  return Object.freeze({
    status: 204,
    headers: Object.freeze({ 'cache-control': 'no-store', [SHIELD_HEADER]: shieldHeader('confirmed', gate) }),
    body: '',
  })
}

/**
 * The headers of a built-in page in each language: `base` with `Content-Language` and `Vary:
 * Accept, Accept-Language`, made once per language.
 */
export class PageHeaders {
  readonly #byLanguage = new Map<PageLanguage, Readonly<Record<string, string>>>()

  constructor(private readonly base: Readonly<Record<string, string>>) {}

  of(language: PageLanguage): Readonly<Record<string, string>> {
    let headers = this.#byLanguage.get(language)
    if (headers === undefined) {
      const vary = this.base.vary === undefined ? 'Accept-Language' : `${this.base.vary}, Accept-Language`
      this.#byLanguage.set(
        language,
        (headers = Object.freeze({ ...this.base, vary, 'content-language': language.tag })),
      )
    }
    return headers
  }
}

function answer(r: AnswerRequest, build: () => GateResponse): GateResponse {
  const get = build()
  return r.method === 'HEAD' ? headAnswer(get) : get
}

/** The busy answer's headers and JSON body for one reason, made once. */
class BusyReasonAnswers {
  readonly json: Readonly<Record<string, string>>
  readonly problem: Readonly<Record<string, string>>
  readonly html: Readonly<Record<string, string>>
  readonly builtIn: PageHeaders
  /** A custom page function's headers: it was told the language (`Content-Language`, `Vary`). */
  readonly custom: PageHeaders
  readonly jsonBody: string
  /** The built-in page without a nonce, by language and delay: a crowd's refusals cost no rendering. */
  readonly pages = new Map<string, string>()

  constructor(busy: BusySettings, gate: string, reason: BusyReason) {
    const common = {
      'retry-after': String(busy.retryAfter),
      'cache-control': 'no-store',
      vary: 'Accept',
      [SHIELD_HEADER]: shieldHeader('busy', gate, reason),
    }
    this.json = Object.freeze({ ...common, 'content-type': JSON_TYPE })
    this.problem = Object.freeze({ ...common, 'content-type': PROBLEM_TYPE })
    this.html = Object.freeze({ ...common, 'content-type': HTML_TYPE })
    this.builtIn = new PageHeaders({ ...this.html, 'content-security-policy': BUSY_PAGE_CSP })
    this.custom = new PageHeaders(this.html)
    this.jsonBody = busyJson(busy.retryAfter, reason)
  }
}

/**
 * The busy answer (`503`, `Retry-After`), with the built-in page, or yours. Its settings come whole
 * ({@link BusySettings}, the gate's `busy` option group): a new one reaches the page without a new
 * parameter here.
 */
export class BusyAnswers {
  private readonly byReason = new Map<BusyReason, BusyReasonAnswers>()
  readonly #settings: BusySettings
  /** Told when a custom page throws (the built-in page is sent instead). */
  private readonly onPageError: (err: unknown) => void
  /** The built-in page's languages. */
  private readonly languages: PageLanguages
  /** The gate's name, in the {@link SHIELD_HEADER}. */
  private readonly gate: string

  constructor(busy: BusySettings, onPageError: (err: unknown) => void, languages?: PageLanguages, gate?: string) {
    this.#settings = busy
    this.onPageError = onPageError
    this.languages = languages ?? new PageLanguages()
    this.gate = gate ?? 'default'
  }

  private of(reason: BusyReason): BusyReasonAnswers {
    let answers = this.byReason.get(reason)
    if (answers === undefined)
      this.byReason.set(reason, (answers = new BusyReasonAnswers(this.#settings, this.gate, reason)))
    return answers
  }

  /**
   * The built-in page in `language` without a nonce. Its delay is jittered ({@link busyPageDelay});
   * each delay's page is rendered once, so a crowd's refusals still spread out and cost no rendering.
   */
  private pageIn(a: BusyReasonAnswers, language: PageLanguage, reason: BusyReason): string {
    const delay = busyPageDelay(this.#settings.retryAfter)
    const key = `${language.tag} ${delay}`
    let page = a.pages.get(key)
    if (page === undefined)
      a.pages.set(key, (page = renderBusyPage(this.#settings, undefined, language, reason, delay)))
    return page
  }

  /**
   * The busy answer for `reason` (default `full`): its {@link SHIELD_HEADER} and JSON name the
   * reason; the built-in page says it in words where it is the visitor's own doing (`client-share`).
   */
  busy(r: AnswerRequest, reason: BusyReason = 'full'): GateResponse {
    return answer(r, () => {
      const a = this.of(reason)
      if (prefersJson(r.accept)) {
        if (asksProblem(r.accept))
          return { status: 503, headers: a.problem, body: busyProblem(this.#settings.retryAfter, reason) }
        return { status: 503, headers: a.json, body: a.jsonBody }
      }
      const nonce = r.nonce()
      const builtIn = (): GateResponse => {
        const language = this.languages.pick(r.acceptLanguage)
        return {
          status: 503,
          headers: a.builtIn.of(language),
          body:
            nonce === undefined
              ? this.pageIn(a, language, reason)
              : renderBusyPage(this.#settings, nonce, language, reason),
        }
      }
      const page = this.#settings.page
      if (page === undefined) return builtIn()
      if (typeof page === 'string') return { status: 503, headers: a.html, body: page }
      try {
        const language = this.languages.pick(r.acceptLanguage)
        const body = String(
          page({ retryAfter: this.#settings.retryAfter, request: r.request, nonce, language, reason }),
        )
        return { status: 503, headers: a.custom.of(language), body }
      } catch (err) {
        this.onPageError(err)
        return builtIn()
      }
    })
  }
}

/** Where a queued visitor stands, as the gate reports it (`eta` in seconds). */
export interface LinePlace {
  position: number | null
  waiting: number
  eta: number | null
  /** A scheduled opening not yet reached (ms since the epoch), else `null`. */
  opensAt: number | null
}

/** The waiting room's answers: `202` with the waiting page (or JSON), and the admitted poll. */
export class LineAnswers {
  private readonly json: Readonly<Record<string, string>>
  private readonly problem: Readonly<Record<string, string>>
  private readonly html: Readonly<Record<string, string>>
  private readonly builtIn: PageHeaders
  /** The custom page's headers: it was told the language (`Content-Language`, `Vary`). */
  private readonly custom: PageHeaders
  private readonly admittedHeaders: Readonly<Record<string, string>>
  private readonly leftHeaders: PageHeaders
  private readonly leftJsonHeaders: Readonly<Record<string, string>>
  private readonly admittedBody: string

  constructor(
    private readonly settings: {
      /** The gate's name, in the {@link SHIELD_HEADER}. */
      gate: string
      order: 'fifo' | 'random'
      pollInterval: number
      keepAliveInterval: number
      /**
       * How long (ms) a page admitted in a hidden tab may stay there, its pass confirmed, before it
       * goes to the site by itself: half the pass's life. `undefined` (no confirm request): it goes at once.
       */
      hold?: number | undefined
    },
    private readonly page: WaitingPage | undefined,
    private readonly onPageError: (err: unknown) => void,
    /** The built-in page's languages. */
    private readonly languages: PageLanguages = new PageLanguages(),
  ) {
    const common = {
      'retry-after': String(Math.ceil(settings.pollInterval / 1000)),
      'cache-control': 'no-store',
      vary: 'Accept',
      [SHIELD_HEADER]: shieldHeader('queued', settings.gate),
    }
    this.json = Object.freeze({ ...common, 'content-type': JSON_TYPE })
    this.problem = Object.freeze({ ...common, 'content-type': PROBLEM_TYPE })
    this.html = Object.freeze({ ...common, 'content-type': HTML_TYPE })
    this.builtIn = new PageHeaders({ ...this.html, 'content-security-policy': WAITING_PAGE_CSP })
    this.custom = new PageHeaders(this.html)
    this.admittedHeaders = Object.freeze({
      'cache-control': 'no-store',
      vary: 'Accept',
      'content-type': JSON_TYPE,
      [SHIELD_HEADER]: shieldHeader('admitted', settings.gate),
    })
    const left = { 'cache-control': 'no-store', vary: 'Accept', [SHIELD_HEADER]: shieldHeader('left', settings.gate) }
    this.leftJsonHeaders = Object.freeze({ ...left, 'content-type': JSON_TYPE })
    this.leftHeaders = new PageHeaders({ ...left, 'content-type': HTML_TYPE, 'content-security-policy': LEFT_PAGE_CSP })
    this.admittedBody = admittedJson(settings.hold)
  }

  /** `202` with the waiting page, or JSON when the client prefers it or is the page polling (`poll`). */
  queued(place: LinePlace, r: AnswerRequest, poll: boolean): GateResponse {
    return answer(r, () => {
      if (!poll && prefersJson(r.accept) && asksProblem(r.accept)) {
        return {
          status: 202,
          headers: this.problem,
          body: queuedProblem(
            place.position,
            place.waiting,
            place.eta,
            Math.ceil(this.settings.pollInterval / 1000),
            place.opensAt,
          ),
        }
      }
      if (poll || prefersJson(r.accept)) {
        return {
          status: 202,
          headers: this.json,
          body: queuedJson(place.position, place.waiting, place.eta, place.opensAt),
        }
      }
      const context = {
        order: this.settings.order,
        ...place,
        pollInterval: this.settings.pollInterval,
        keepAliveInterval: this.settings.keepAliveInterval,
        nonce: r.nonce(),
      }
      const language = this.languages.pick(r.acceptLanguage)
      if (this.page !== undefined) {
        try {
          return {
            status: 202,
            headers: this.custom.of(language),
            body: String(this.page({ ...context, request: r.request, language })),
          }
        } catch (err) {
          this.onPageError(err)
        }
      }
      return { status: 202, headers: this.builtIn.of(language), body: renderWaitingPage(context, language) }
    })
  }

  /** After "Leave the line": `200` with the page that says so (in the visitor's language), or `{"status":"left"}`. */
  left(r: AnswerRequest, path: string): GateResponse {
    if (prefersJson(r.accept)) return { status: 200, headers: this.leftJsonHeaders, body: LEFT_JSON }
    const language = this.languages.pick(r.acceptLanguage)
    return { status: 200, headers: this.leftHeaders.of(language), body: renderLeftPage(path, language) }
  }

  /**
   * What a polling waiting page gets once admitted (with the pass cookie): it then reloads, or, in
   * a hidden tab, confirms the pass and waits (at most `hold` ms) for the visitor to come back.
   */
  admitted(): GateResponse {
    return { status: 200, headers: this.admittedHeaders, body: this.admittedBody }
  }
}
