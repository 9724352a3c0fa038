/**
 * The gate on Web-standard `Request` and `Response` (the fetch API): what the `airlock-shield/fetch`
 * entry and the Hono middleware share. It only translates: a `Request` becomes a {@link RequestView},
 * a decision becomes a `Response` (the gate's answer) or an {@link WebAnswer} to finish the route's
 * own response with (the gate's cookie and headers added, `Airlock-Command` acted on and removed,
 * and in request mode the slot released once its body ends). Web APIs only: no `node:` import.
 */
import type { Gate } from '../gate/gate.js'
import { Admission } from '../gate/admission.js'
import { COMMAND_HEADER, NO_HANDLE } from '../gate/handle.js'
import type { AirlockHandle, GateDecision, GateResponse, RequestView } from '../gate/types.js'

const NONE: readonly string[] = Object.freeze([])

/** The request headers the gate reads, looked up in a `Headers` when read (most are never read). */
class HeaderView {
  readonly #h: Headers
  constructor(headers: Headers) {
    this.#h = headers
  }
  get cookie(): string | undefined {
    return this.#h.get('cookie') ?? undefined
  }
  get accept(): string | undefined {
    return this.#h.get('accept') ?? undefined
  }
  get 'accept-language'(): string | undefined {
    return this.#h.get('accept-language') ?? undefined
  }
  get 'x-airlock-poll'(): string | undefined {
    return this.#h.get('x-airlock-poll') ?? undefined
  }
  get 'x-airlock-solution'(): string | undefined {
    return this.#h.get('x-airlock-solution') ?? undefined
  }
  get origin(): string | undefined {
    return this.#h.get('origin') ?? undefined
  }
  get host(): string | undefined {
    return this.#h.get('host') ?? undefined
  }
  get 'sec-fetch-site'(): string | undefined {
    return this.#h.get('sec-fetch-site') ?? undefined
  }
}

/** Path and query of an absolute URL (`https://a.example/b?c` → `/b?c`), without parsing it whole. */
export function pathOf(url: string): string {
  const scheme = url.indexOf('://')
  if (scheme < 0) return url.startsWith('/') ? url : '/'
  const at = url.indexOf('/', scheme + 3)
  if (at >= 0) return url.slice(at)
  const query = url.indexOf('?', scheme + 3)
  return query < 0 ? '/' : `/${url.slice(query)}`
}

/** The first value of a comma-separated header (`X-Forwarded-Proto: https, http` → `https`). */
function firstValue(value: string | null): string | undefined {
  if (value === null) return undefined
  const comma = value.indexOf(',')
  const first = (comma < 0 ? value : value.slice(0, comma)).trim()
  return first === '' ? undefined : first
}

/** HTTPS: the request's own URL (`url`: `request.url`, read once), or (`trustProxy` only) the first `X-Forwarded-Proto`. */
export function isSecure(request: Request, trustProxy: boolean, url = request.url): boolean {
  if (trustProxy) {
    const proto = firstValue(request.headers.get('x-forwarded-proto'))
    if (proto !== undefined) return proto.toLowerCase() === 'https'
  }
  return url.startsWith('https:')
}

/**
 * The client's address a fetch handler can know without help: the first `X-Forwarded-For` address
 * when `trustProxy` (every client's header is believed: only behind a proxy you run), else the
 * socket of `@hono/node-server` (its handler's second argument, `{ incoming }`), else `undefined`.
 */
export function defaultAddress(request: Request, bindings: unknown, trustProxy: boolean): string | undefined {
  if (trustProxy) {
    const forwarded = firstValue(request.headers.get('x-forwarded-for'))
    if (forwarded !== undefined) return forwarded
  }
  const incoming = (bindings as { incoming?: { socket?: { remoteAddress?: string } } } | null | undefined)?.incoming
  return incoming?.socket?.remoteAddress
}

/**
 * `@hono/node-server`'s Node request headers (its handler's second argument, `{ incoming }`), when
 * there: the gate reads them as they are, without making the `Request` build its `Headers` from
 * them (most of what gating a pass holder cost on that server).
 */
export function nodeHeaders(bindings: unknown): RequestView['headers'] | undefined {
  const headers = (bindings as { incoming?: { headers?: unknown } } | null | undefined)?.incoming?.headers
  return typeof headers === 'object' && headers !== null ? (headers as RequestView['headers']) : undefined
}

/** The gate's answer as a `Response`, with the decision's cookie. `HEAD`: the headers of the `GET` answer, no body. */
export function toResponse(r: GateResponse, setCookie: string | undefined, method: string): Response {
  const headers = new Headers(r.headers)
  if (setCookie !== undefined) headers.append('set-cookie', setCookie)
  return new Response(method === 'HEAD' || r.status === 204 ? null : r.body, { status: r.status, headers })
}

/**
 * `@hono/node-server` makes its own light `Response`: the body, status and headers it was given,
 * kept under an own symbol (described `cache`) as `[status, body, headers]`, and sent as they are
 * unless something reads `response.headers`, which builds undici's `Headers` and sends the response
 * down the server's slower path (about 2 µs a request, most of what the fetch adapter cost a pass
 * holder). That symbol, once seen on a route's response; `null` once a few responses had none (not
 * that server, or a version that keeps it otherwise: then `headers` is read as any runtime's).
 */
let lightInit: symbol | null | undefined
let lightMisses = 0

function lightInitOf(response: Response): symbol | null {
  for (const s of Object.getOwnPropertySymbols(response)) {
    const v = (response as unknown as Record<symbol, unknown>)[s]
    if (s.description === 'cache' && Array.isArray(v) && v.length === 3) return (lightInit = s)
  }
  if (++lightMisses >= 16) lightInit = null
  return null
}

/**
 * The route's `Airlock-Command`, or `null`: from a light response's headers as it was given them
 * (none, a plain object, a `Headers`), without building its `Headers`; else `response.headers`.
 */
export function commandOf(response: Response): string | null {
  const key = lightInit === undefined ? lightInitOf(response) : lightInit
  const cache = key === null ? undefined : (response as unknown as Record<symbol, unknown>)[key]
  if (Array.isArray(cache)) {
    const init: unknown = cache[2]
    if (init === undefined || init === null) return null
    if (init instanceof Headers) return init.get(COMMAND_HEADER)
    if (typeof init === 'object' && !Array.isArray(init) && Object.getPrototypeOf(init) === Object.prototype) {
      for (const k in init)
        if (k.length === COMMAND_HEADER.length && k.toLowerCase() === COMMAND_HEADER)
          return String((init as Record<string, unknown>)[k])
      return null
    }
  }
  return response.headers.get(COMMAND_HEADER)
}

/** Headers a response may still take; a copy of the response when its headers are immutable (a `fetch()` result, `Response.redirect`). */
function mutable(response: Response): Response {
  try {
    response.headers.set(COMMAND_HEADER, '')
    response.headers.delete(COMMAND_HEADER)
    return response
  } catch {
    return new Response(response.body, response)
  }
}

/**
 * Calls `done` once, when the body has been read to its end, or its reader gave up (`cancel`: the
 * server stopped writing it, the client went away), or it failed. A new `Response` around the body.
 */
function watchBody(response: Response, done: () => void): Response {
  const source = response.body
  if (source === null) {
    done()
    return response
  }
  const reader = source.getReader()
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: end, value } = await reader.read()
        if (end) {
          controller.close()
          done()
        } else controller.enqueue(value)
      } catch (err) {
        controller.error(err)
        done()
      }
    },
    cancel(reason) {
      done()
      return reader.cancel(reason)
    },
  })
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
}

/**
 * One request's admission, on the Web's `Request` and `Response` (the admission's Web translation,
 * src/gate/admission.ts), for a middleware: send {@link response} when set (the route must not run);
 * else run the route and pass its response to {@link finish} (or call {@link fail} when it threw).
 * The gate's cookies and headers wait here until the route's response is at hand.
 */
export class WebAnswer<Req = unknown> extends Admission<Req> {
  /** The gate's own answer (busy `503`, waiting `202`, the challenge, the confirm `204`, an admitted poll, "left the line"); `undefined`: on to the route. */
  readonly response: Response | undefined
  readonly #request: Request
  readonly #secure: boolean
  /** The gate's cookies for the route's response (the shared empty list until one is added); `undefined` once it is finished. */
  #cookies: readonly string[] | undefined = NONE
  /** The gate's other headers for the route's response (name, value, ...). */
  #headers: string[] | undefined

  constructor(gate: Gate<Req>, decision: GateDecision, request: Request, secure: boolean) {
    super(gate, decision)
    this.#request = request
    this.#secure = secure
    const answer = this.open()
    this.response = answer === undefined ? undefined : toResponse(answer, decision.setCookie, request.method)
  }

  protected addHeader(name: string, value: string): void {
    if (name !== 'set-cookie') (this.#headers ??= []).push(name, value)
    else if (this.#cookies !== undefined) this.#cookies = [...this.#cookies, value]
  }
  protected cookies(): string[] | undefined {
    return this.#cookies as string[] | undefined
  }
  protected setCookies(cookies: string[]): void {
    if (this.#cookies !== undefined) this.#cookies = cookies
  }
  protected secure(): boolean {
    return this.#secure
  }

  /** The route's view of the decision (`release()` ends the pass or the request's slot early). */
  get airlock(): AirlockHandle {
    return this.decision.kind === 'bypass' ? NO_HANDLE : this
  }

  /**
   * For a middleware that never sees the route's response (Next.js `proxy.ts`:
   * `NextResponse.next({ headers: answer.headers })`): what that response must carry, the new or
   * renewed pass's `Set-Cookie` and the confirm `Link`. Such a middleware cannot act on
   * `Airlock-Command` nor release a request-mode slot when the response ends (the slot then lives
   * until `ttl`): use session mode there, or {@link finish} where the response is at hand.
   */
  get headers(): Headers {
    const headers = new Headers()
    for (const c of this.#cookies ?? NONE) headers.append('set-cookie', c)
    const more = this.#headers
    if (more !== undefined) for (let i = 0; i < more.length; i += 2) headers.append(more[i]!, more[i + 1]!)
    return headers
  }

  /**
   * The route's response, finished: the gate's cookie (a new or renewed pass) and headers (the
   * confirm link) added, an `Airlock-Command: release` acted on and removed; in request mode the
   * slot is released once the body has been sent (or given up on, or the client went away). The
   * same response when nothing had to change, else a new one: send what this returns. Once.
   */
  finish(response: Response): Response {
    const d = this.decision
    const slot = this.slot
    const status = response.status
    if (slot === undefined) this.ended(status)
    const command = d.kind === 'bypass' ? null : commandOf(response)
    const more = this.#headers
    if (command !== null || (this.#cookies ?? NONE).length > 0 || more !== undefined) {
      response = mutable(response)
      if (command !== null) {
        response.headers.delete(COMMAND_HEADER)
        // Before the cookies go out: ending the pass replaces its cookie with one that clears it.
        this.command(command)
      }
      for (const c of this.#cookies ?? NONE) response.headers.append('set-cookie', c)
      if (more !== undefined) for (let i = 0; i < more.length; i += 2) response.headers.append(more[i]!, more[i + 1]!)
    }
    this.#cookies = undefined
    if (slot === undefined) return response
    const release = (): void => this.ended(status)
    // No body will be read: a HEAD answer (Hono, and some servers, drop it unread), or the client is gone.
    const signal = this.#request.signal
    if (this.#request.method === 'HEAD' || signal.aborted) {
      release()
      return response
    }
    signal.addEventListener('abort', release, { once: true })
    return watchBody(response, () => {
      signal.removeEventListener('abort', release)
      release()
    })
  }

  /** The route threw (no response): request mode frees the slot, as failed work. */
  fail(): void {
    this.#cookies = undefined
    this.failed()
  }
}

/**
 * Decides `request` (`req`: what `skip`, `nonce`, `busyPage` and `clientKey` are given). Synchronous
 * for pass holders. `headers`: the same request's headers as a plain object, when the server has
 * them (see {@link nodeHeaders}); else they are read from `request.headers`.
 */
export function check<Req>(
  gate: Gate<Req>,
  request: Request,
  req: Req,
  ip: string | undefined,
  trustProxy: boolean,
  headers?: RequestView['headers'],
): WebAnswer<Req> | Promise<WebAnswer<Req>> {
  // `request.url` is serialized on each read: once here.
  const url = request.url
  const secure = isSecure(request, trustProxy, url)
  const view: RequestView<Req> = {
    method: request.method,
    url: pathOf(url),
    headers: headers ?? new HeaderView(request.headers),
    secure,
    ip,
    routing: undefined,
    request: req,
  }
  const d = gate.decide(view)
  return d instanceof Promise
    ? d.then((x) => new WebAnswer(gate, x, request, secure))
    : new WebAnswer(gate, d, request, secure)
}
