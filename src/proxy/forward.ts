/**
 * Forwarding one admitted request to the origin and its answer back, streamed both ways, on a
 * keep-alive pool (undici, an optional peer), through undici's lowest-level `dispatch` (no promise,
 * no parsed header object, no AbortController per request). Bounded by `upstreamTimeout` (to
 * connect and to the answer's headers, timed here; between body chunks, by undici): an origin that
 * hangs gets a `504`, one that refuses or breaks a `502`, small pages that try again by themselves.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http'
import { prefersJson } from '../base/http.js'
import { PageLanguages } from '../pages/language.js'
import { originErrorHeaders, originErrorJson, originErrorPage } from '../pages/origin.js'
import { responseHeaderList } from './headers.js'

type Undici = typeof import('undici')
type Pool = InstanceType<Undici['Pool']>

/** How a forwarded request ended, for the access log and the gate. */
export interface Outcome {
  /** The origin's status, or `null` when it gave none (down, too slow, the client left first). */
  upstream: number | null
  /** Time to the origin's headers (ms), or to the failure. */
  upstreamMs: number
  /** Why the proxy answered or ended it itself: `refused` (502), `timeout` (504), `broken` (the body stopped midway), `aborted` (the client left). */
  error?: 'refused' | 'timeout' | 'broken' | 'aborted'
  /** The error's own words, for the log. */
  cause?: string
  /** The origin's `Airlock-Command`, lowercased. */
  command?: string
}

/**
 * Called with the origin's status and header list (`[name, value, name, value, ...]`) before they
 * are written: adds the gate's headers (its cookie) to the list, acts on the command.
 */
export type BeforeHead = (status: number, headers: string[], command: string | undefined) => void

const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])

/** One request's exchange with the origin: undici's dispatch handler, writing into `res`. */
class Exchange {
  readonly outcome: Outcome = { upstream: null, upstreamMs: 0 }
  readonly #t0 = performance.now()
  #abort: ((err?: Error) => void) | undefined
  #timer: NodeJS.Timeout | undefined
  #timedOut = false
  #left = false
  #done = false
  #resume: (() => void) | undefined

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly beforeHead: BeforeHead,
    timeout: number,
    private readonly finish: (outcome: Outcome) => void,
    /** The 502/504 pages' languages. */
    private readonly languages: PageLanguages,
  ) {
    this.#timer = setTimeout(() => {
      this.#timedOut = true
      this.#abort?.(new Error(`no answer within ${timeout} ms`))
    }, timeout)
    res.once('close', this.#onClose)
  }

  /** The client left before the answer was over: the origin's request is aborted. */
  readonly #onClose = (): void => {
    if (this.res.writableFinished || this.#done) return
    this.#left = true
    this.#abort?.()
  }

  onConnect(abort: (err?: Error) => void): void {
    this.#abort = abort
    if (this.#left) abort()
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    // 1xx informational answers (100 Continue from the origin) are the proxy's business, not the client's.
    if (statusCode < 200) return true
    clearTimeout(this.#timer)
    const o = this.outcome
    o.upstream = statusCode
    o.upstreamMs = performance.now() - this.#t0
    const { list, command } = responseHeaderList(rawHeaders)
    if (command !== undefined) o.command = command
    this.beforeHead(statusCode, list, command)
    this.res.writeHead(statusCode, list)
    this.#resume = resume
    return true
  }

  /** A chunk of the answer's body; `false` pauses the origin until the client has drained what it was sent. */
  onData(chunk: Buffer): boolean {
    if (this.res.write(chunk)) return true
    this.res.once('drain', this.#resume!)
    return false
  }

  onComplete(): void {
    this.res.end()
    this.#end()
  }

  onError(err: Error): void {
    const o = this.outcome
    const code = (err as { code?: string }).code
    if (o.upstream === null) o.upstreamMs = performance.now() - this.#t0
    o.cause = err.message
    if (this.#left && !this.#timedOut) o.error = 'aborted'
    else if (this.res.headersSent) {
      o.error = 'broken'
      this.res.destroy()
    } else {
      const timeout = this.#timedOut || (code !== undefined && TIMEOUTS.has(code))
      o.error = timeout ? 'timeout' : 'refused'
      answerOriginError(this.req, this.res, timeout ? 504 : 502, this.languages)
    }
    this.#end()
  }

  #end(): void {
    if (this.#done) return
    this.#done = true
    clearTimeout(this.#timer)
    this.res.removeListener('close', this.#onClose)
    this.finish(this.outcome)
  }
}

export class Forwarder {
  readonly #pool: Pool
  readonly #prefix: string
  readonly #timeout: number
  readonly #languages: PageLanguages

  /** `languages`: the 502/504 pages' (the `messages` option applied). */
  constructor(undici: Undici, target: URL, timeout: number, languages: PageLanguages = new PageLanguages()) {
    this.#timeout = timeout
    this.#languages = languages
    // undici's own timers tick every half second: the wait for the answer's headers is timed here
    // (to the millisecond), theirs are the backstop; between body chunks theirs is the one.
    this.#pool = new undici.Pool(target.origin, {
      headersTimeout: timeout + 1_000,
      bodyTimeout: timeout,
      connect: { timeout: timeout + 1_000 },
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 600_000,
    })
    this.#prefix = target.pathname === '/' ? '' : target.pathname.replace(/\/$/, '')
  }

  /**
   * Sends `req` (its body streamed) with `headers` to the origin and pipes the answer into `res`;
   * `done(outcome)` once it is over (answered, failed, or the client left). Never throws.
   */
  forward(
    req: IncomingMessage,
    res: ServerResponse,
    headers: string[],
    beforeHead: BeforeHead,
    done: (outcome: Outcome) => void,
  ): void {
    const te = req.headers['transfer-encoding']
    const cl = req.headers['content-length']
    const body = te !== undefined || (cl !== undefined && cl !== '0') ? req : null
    const exchange = new Exchange(req, res, beforeHead, this.#timeout, done, this.#languages)
    try {
      this.#pool.dispatch(
        { path: this.#prefix + (req.url ?? '/'), method: req.method ?? 'GET', headers, body },
        exchange as never,
      )
    } catch (err) {
      exchange.onError(err as Error)
    }
  }

  close(): Promise<void> {
    return this.#pool.close()
  }
}

/**
 * The 502 or 504 page in the visitor's language (JSON for API clients); the connection closes when
 * the request's body was not read.
 */
export function answerOriginError(
  req: IncomingMessage,
  res: ServerResponse,
  status: 502 | 504,
  languages: PageLanguages,
): void {
  if (res.headersSent || res.destroyed) return
  const json = prefersJson(req.headers.accept)
  const language = json ? undefined : languages.pick(req.headers['accept-language'])
  const body = language === undefined ? originErrorJson(status) : originErrorPage(status, language)
  const headers: OutgoingHttpHeaders = {
    ...originErrorHeaders(json, language, status),
    'content-length': Buffer.byteLength(body),
  }
  if (!req.complete) headers.connection = 'close'
  res.writeHead(status, headers)
  res.end(req.method === 'HEAD' ? undefined : body)
}
