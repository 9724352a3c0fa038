/**
 * The gate's own HTTP answers, built beside the pages they carry: busy (`503`), queued (`202`),
 * admitted (the waiting page's poll), and the confirm request (`204`). JSON or HTML by `Accept`;
 * `HEAD` gets the headers (and `Content-Length`) the `GET` would get.
 */
import { asksProblem, headAnswer, prefersJson } from '../base/http.js'
import { busyProblem, PROBLEM_TYPE, queuedProblem } from './problem.js'
import { BUSY_PAGE_CSP, busyJson, renderBusyPage, type BusyPage } from './busy.js'
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

/** The confirm request's answer: no content, never cached. */
export const CONFIRMED: GateResponse = Object.freeze({
  status: 204,
  headers: Object.freeze({ 'cache-control': 'no-store' }),
  body: '',
})

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
      this.#byLanguage.set(language, (headers = Object.freeze({ ...this.base, vary, 'content-language': language.tag })))
    }
    return headers
  }
}

function answer(r: AnswerRequest, build: () => GateResponse): GateResponse {
  const get = build()
  return r.method === 'HEAD' ? headAnswer(get) : get
}

/** The busy answer (`503`, `Retry-After`), with the built-in page, or yours. */
export class BusyAnswers {
  private readonly json: Readonly<Record<string, string>>
  private readonly problem: Readonly<Record<string, string>>
  private readonly html: Readonly<Record<string, string>>
  private readonly builtIn: PageHeaders
  /** A custom page function's headers: it was told the language (`Content-Language`, `Vary`). */
  private readonly custom: PageHeaders
  private readonly jsonBody: string
  private readonly shareJsonBody: string

  constructor(
    private readonly retryAfter: number,
    private readonly page: BusyPage | undefined,
    /** Told when a custom page throws (the built-in page is sent instead). */
    private readonly onPageError: (err: unknown) => void,
    /** The built-in page's languages. */
    private readonly languages: PageLanguages = new PageLanguages(),
  ) {
    const common = { 'retry-after': String(retryAfter), 'cache-control': 'no-store', vary: 'Accept' }
    this.json = Object.freeze({ ...common, 'content-type': JSON_TYPE })
    this.problem = Object.freeze({ ...common, 'content-type': PROBLEM_TYPE })
    this.html = Object.freeze({ ...common, 'content-type': HTML_TYPE })
    this.builtIn = new PageHeaders({ ...this.html, 'content-security-policy': BUSY_PAGE_CSP })
    this.custom = new PageHeaders(this.html)
    this.jsonBody = busyJson(retryAfter)
    this.shareJsonBody = busyJson(retryAfter, 'client-share')
  }

  /** The built-in page in `language` without a nonce: the same every time, rendered once (a crowd's refusals cost no rendering). */
  private pageIn(language: PageLanguage): string {
    let page = this.pages.get(language)
    if (page === undefined) this.pages.set(language, (page = renderBusyPage(this.retryAfter, undefined, language)))
    return page
  }

  private readonly pages = new Map<PageLanguage, string>()

  /** `reason` `'client-share'`: the JSON says so (`"reason":"client-share"`); the page is the same. */
  busy(r: AnswerRequest, reason?: 'client-share'): GateResponse {
    return answer(r, () => {
      if (prefersJson(r.accept)) {
        if (asksProblem(r.accept)) return { status: 503, headers: this.problem, body: busyProblem(this.retryAfter, reason) }
        return { status: 503, headers: this.json, body: reason === undefined ? this.jsonBody : this.shareJsonBody }
      }
      const nonce = r.nonce()
      const builtIn = (): GateResponse => {
        const language = this.languages.pick(r.acceptLanguage)
        return { status: 503, headers: this.builtIn.of(language), body: nonce === undefined ? this.pageIn(language) : renderBusyPage(this.retryAfter, nonce, language) }
      }
      if (this.page === undefined) return builtIn()
      if (typeof this.page === 'string') return { status: 503, headers: this.html, body: this.page }
      try {
        const language = this.languages.pick(r.acceptLanguage)
        const body = String(this.page({ retryAfter: this.retryAfter, request: r.request, nonce, language }))
        return { status: 503, headers: this.custom.of(language), body }
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
  private readonly admittedBody: string

  constructor(
    private readonly settings: {
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
    const common = { 'retry-after': String(Math.ceil(settings.pollInterval / 1000)), 'cache-control': 'no-store', vary: 'Accept' }
    this.json = Object.freeze({ ...common, 'content-type': JSON_TYPE })
    this.problem = Object.freeze({ ...common, 'content-type': PROBLEM_TYPE })
    this.html = Object.freeze({ ...common, 'content-type': HTML_TYPE })
    this.builtIn = new PageHeaders({ ...this.html, 'content-security-policy': WAITING_PAGE_CSP })
    this.custom = new PageHeaders(this.html)
    this.admittedHeaders = Object.freeze({ 'cache-control': 'no-store', vary: 'Accept', 'content-type': JSON_TYPE })
    this.leftHeaders = new PageHeaders({ 'cache-control': 'no-store', vary: 'Accept', 'content-type': HTML_TYPE, 'content-security-policy': LEFT_PAGE_CSP })
    this.admittedBody = admittedJson(settings.hold)
  }

  /** `202` with the waiting page, or JSON when the client prefers it or is the page polling (`poll`). */
  queued(place: LinePlace, r: AnswerRequest, poll: boolean): GateResponse {
    return answer(r, () => {
      if (!poll && prefersJson(r.accept) && asksProblem(r.accept)) {
        return { status: 202, headers: this.problem, body: queuedProblem(place.position, place.waiting, place.eta, Math.ceil(this.settings.pollInterval / 1000), place.opensAt) }
      }
      if (poll || prefersJson(r.accept)) {
        return { status: 202, headers: this.json, body: queuedJson(place.position, place.waiting, place.eta, place.opensAt) }
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
          return { status: 202, headers: this.custom.of(language), body: String(this.page({ ...context, request: r.request, language })) }
        } catch (err) {
          this.onPageError(err)
        }
      }
      return { status: 202, headers: this.builtIn.of(language), body: renderWaitingPage(context, language) }
    })
  }

  /** After "Leave the line": `200` with the page that says so (in the visitor's language), or `{"status":"left"}`. */
  left(r: AnswerRequest, path: string): GateResponse {
    if (prefersJson(r.accept)) return { status: 200, headers: this.admittedHeaders, body: LEFT_JSON }
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
