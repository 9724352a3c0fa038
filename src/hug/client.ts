/**
 * One request of `airlock hug`: Node's `http`/`https` over a keep-alive agent (from a source
 * address of its own when the target is local), the visitor's cookies sent and kept, the answer
 * read (up to a bound) and classified by the shield's `Airlock` header: the shield's answer (busy,
 * queued, challenge, ...) or the origin's.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'

/** The shield's `Airlock` header, read: `busy; reason=full; gate=shop`. */
export interface ShieldAnswer {
  kind: string
  reason: string | undefined
  gate: string | undefined
}

/** Reads an `Airlock` header value; `undefined` when absent (the origin's answer). */
export function readShieldHeader(value: string | string[] | undefined): ShieldAnswer | undefined {
  const v = Array.isArray(value) ? value[0] : value
  if (v === undefined || v.trim() === '') return undefined
  const [kind, ...params] = v.split(';').map((p) => p.trim())
  const param = (name: string): string | undefined => {
    const p = params.find((x) => x.startsWith(`${name}=`))
    if (p === undefined) return undefined
    const raw = p.slice(name.length + 1)
    return raw.startsWith('"') ? raw.slice(1, -1) : raw
  }
  return { kind: kind!.toLowerCase(), reason: param('reason'), gate: param('gate') }
}

/** A visitor's cookies, by name (what a browser keeps for one site). */
export class CookieJar {
  readonly #values = new Map<string, string>()

  get size(): number {
    return this.#values.size
  }

  /** The `Cookie` header to send, or `undefined` when there is none. */
  header(): string | undefined {
    if (this.#values.size === 0) return undefined
    let out = ''
    for (const [name, value] of this.#values) out += `${out ? '; ' : ''}${name}=${value}`
    return out
  }

  /** Keeps the `Set-Cookie` values of an answer (`Max-Age=0` or a past `Expires` forgets one). */
  take(setCookie: string[] | undefined): void {
    for (const line of setCookie ?? []) {
      const eq = line.indexOf('=')
      if (eq <= 0) continue
      const name = line.slice(0, eq).trim()
      const semi = line.indexOf(';', eq)
      const value = line.slice(eq + 1, semi === -1 ? undefined : semi).trim()
      const attrs = semi === -1 ? '' : line.slice(semi).toLowerCase()
      const expires = /;\s*expires=([^;]+)/.exec(attrs)
      if (/;\s*max-age=0\b/.test(attrs) || (expires && Date.parse(expires[1]!) < Date.now())) this.#values.delete(name)
      else this.#values.set(name, value)
    }
  }
}

/** An answer as `airlock hug` reads it. */
export interface HugAnswer {
  status: number
  /** The shield's `Airlock` header; `undefined`: the origin answered. */
  shield: ShieldAnswer | undefined
  headers: IncomingMessage['headers']
  /** The body, up to {@link BODY_LIMIT} bytes (the rest is read and dropped). */
  body: string
  /** From sending to the last byte (ms). */
  ms: number
}

/** What a request failed with before any answer: refused, reset, or no answer in time. */
export class NoAnswer extends Error {
  constructor(
    readonly why: 'timeout' | 'network',
    message: string,
  ) {
    super(message)
  }
}

const BODY_LIMIT = 64 * 1024

/** Sends requests to one site: the agents, the timeout, and where each visitor connects from. */
export class HugClient {
  readonly #agent: HttpAgent
  readonly #send: typeof httpRequest

  constructor(
    private readonly timeout: number,
    secure: boolean,
  ) {
    const options = { keepAlive: true, maxSockets: Infinity, maxFreeSockets: 1024, scheduling: 'lifo' as const }
    this.#agent = secure ? new HttpsAgent(options) : new HttpAgent(options)
    this.#send = secure ? (httpsRequest as typeof httpRequest) : httpRequest
  }

  /**
   * `GET url` (or `method`) with `headers`, from `localAddress` when given (the agent keeps one
   * pool per source address). Rejects with {@link NoAnswer} when no answer comes.
   */
  request(url: URL, headers: Record<string, string>, localAddress?: string, method = 'GET'): Promise<HugAnswer> {
    const t0 = performance.now()
    return new Promise((resolve, reject) => {
      const req = this.#send(
        url,
        { method, headers, agent: this.#agent, ...(localAddress ? { localAddress } : {}), timeout: this.timeout },
        (res) => {
          const chunks: Buffer[] = []
          let size = 0
          res.on('data', (chunk: Buffer) => {
            if (size < BODY_LIMIT) chunks.push(chunk)
            size += chunk.length
          })
          res.on('end', () => {
            resolve({
              status: res.statusCode ?? 0,
              shield: readShieldHeader(res.headers.airlock),
              headers: res.headers,
              body: Buffer.concat(chunks).toString('utf8', 0, Math.min(size, BODY_LIMIT)),
              ms: performance.now() - t0,
            })
          })
          res.on('error', (err) => reject(new NoAnswer('network', err.message)))
        },
      )
      req.on('timeout', () => req.destroy(new NoAnswer('timeout', `no answer within ${this.timeout} ms`)))
      req.on('error', (err) => reject(err instanceof NoAnswer ? err : new NoAnswer('network', err.message)))
      req.end()
    })
  }

  close(): void {
    this.#agent.destroy()
  }
}
