/**
 * A gate's own answers to requests it turns away: the busy decision (503 page or JSON), and what
 * the page builders get of a request (its method, `Accept`, `Accept-Language`, the framework's request, a CSP nonce
 * from the user's `nonce` function). User functions (`skip`, `nonce`) that throw are logged once.
 */
import { BusyAnswers, type BusyReason } from '../pages/answers.js'
import type { BusySettings } from '../pages/busy.js'
import type { PageLanguages } from '../pages/language.js'
import { guardedCall } from './decisions.js'
import type { BusyDecision, GateLogger, RequestView } from './types.js'

/** What the gate's answers are made of: the resolved options' (`GateSettings`) fields they read, handed whole. */
export interface AnswerSettings<Req> {
  /** The gate's name. */
  name: string
  logger: GateLogger
  /** The busy answer's settings (the `busy` option group). */
  busy: BusySettings
  nonce: ((request: Req) => string | undefined) | undefined
  /** The built-in pages' languages (the `messages` option). */
  languages: PageLanguages
}

export class GateAnswers<Req> {
  /** User functions that threw (logged once each). */
  readonly #warned = new Set<string>()
  readonly pages: BusyAnswers
  private readonly gate: string
  private readonly logger: GateLogger
  private readonly nonce: ((request: Req) => string | undefined) | undefined
  /** The built-in pages' languages (the `messages` option). */
  readonly languages: PageLanguages

  constructor(s: AnswerSettings<Req>) {
    ;({ name: this.gate, logger: this.logger, nonce: this.nonce, languages: this.languages } = s)
    this.pages = new BusyAnswers(s.busy, this.pageError('busy.page'), s.languages, s.name)
  }

  /** Logs a page builder that threw (the built-in page is sent instead). */
  pageError(option: string): (err: unknown) => void {
    return (err) =>
      this.logger.warn({ err, gate: this.gate }, `airlock-shield: ${option} threw; sending the built-in page`)
  }

  /** The busy decision for `reason` (the challenge is the door's own answer). */
  busy(view: RequestView<Req>, reason: BusyReason): BusyDecision {
    return { kind: 'busy', reason, setCookie: undefined, response: this.pages.busy(this.request(view), reason) }
  }

  /** What the page builders get of `view`. */
  request(view: RequestView<Req>) {
    const nonce = this.nonce
    const makeNonce = () => (nonce === undefined ? undefined : this.userCall('nonce', nonce, view.request))
    const headers = view.headers
    return {
      method: view.method,
      accept: headers.accept,
      acceptLanguage: headers['accept-language'],
      request: view.request,
      nonce: makeNonce,
    }
  }

  /** A user's `skip` or `nonce` function: one that throws answers `undefined`, logged once per gate. */
  userCall<T>(option: 'skip' | 'nonce' | 'clientKey', fn: (request: Req) => T, request: Req): T | undefined {
    return guardedCall(option, fn, request, this.#warned, this.logger, this.gate)
  }
}
