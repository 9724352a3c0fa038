/**
 * Signing in to the dashboard: a small form that POSTs the token (the answer sets the dashboard
 * cookie, so the token is never in a URL), the cookie itself, and a per-client slow-down of wrong
 * tokens that never stands between the operator and the dashboard (issue 38).
 *
 * The cookie is an HMAC of the token under the dashboard's secret: it cannot be computed from a
 * guessed token, so a request carrying a valid one is let in before any slow-down (guessing cookies
 * is guessing 256 bits). A token (form, `Authorization: Bearer`, `?token=`) is checked only while
 * its client is not slowed down, so a guesser gets a few tries a minute, and only its own client:
 * clients are counted as the gate counts them (the address behind trusted proxies, an IPv6 /64).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import { BASE_STYLE, inlineHashes, pageCsp } from '../pages/csp.js'

const STYLE = `${BASE_STYLE}input,button{font:inherit;padding:.4em .6em;margin:.3em}`

/** The sign-in page's policy: its style by hash, no script, a form posting to its own origin only. */
export const SIGN_IN_CSP = pageCsp(inlineHashes('', STYLE), '').replace("form-action 'none'", "form-action 'self'")

/** The sign-in page: one password field, posted to the same address. */
export function signInPage(wrong: boolean): string {
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">' +
    `<meta name="robots" content="noindex"><title>Sign in: airlock dashboard</title><style>${STYLE}</style></head><body><main>` +
    '<h1>airlock dashboard</h1>' +
    (wrong
      ? '<p role="alert">That token is not right.</p>'
      : '<p>Paste the dashboard token (AIRLOCK_DASHBOARD_TOKEN).</p>') +
    '<form method="post"><label for="t">Token</label> <input id="t" name="token" type="password" autocomplete="current-password" required autofocus>' +
    ' <button>Sign in</button></form></main></body></html>'
  )
}

/** The dashboard cookie's name. */
export const COOKIE = 'airlock_dashboard'
const COOKIE_VALUE = /(?:^|;\s*)airlock_dashboard=([0-9a-f]{64})/g

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest()

/** The dashboard's credentials: the token, and the cookie it becomes. */
export class Credentials {
  readonly #expected: Buffer
  readonly #cookies: Buffer[]
  /** The cookie value an operator gets on signing in (the first secret's). */
  readonly cookieValue: string

  constructor(token: string, secrets: readonly string[]) {
    this.#expected = digest(token)
    const subject = `airlock-dashboard~${this.#expected.toString('hex')}`
    this.#cookies = secrets.map((s) => Buffer.from(createHmac('sha256', s).update(subject).digest('hex'), 'latin1'))
    this.cookieValue = this.#cookies[0]!.toString('latin1')
  }

  /** Whether `presented` is the token (constant time: both sides hashed first, so not even the length leaks). */
  token(presented: string): boolean {
    return timingSafeEqual(digest(presented), this.#expected)
  }

  /** Whether a `Cookie` header carries a valid dashboard cookie (under any of the secrets). */
  cookie(header: string | undefined): boolean {
    if (header === undefined || !header.includes(COOKIE)) return false
    for (const m of header.matchAll(COOKIE_VALUE)) {
      const given = Buffer.from(m[1]!, 'latin1')
      let ok = false
      for (const c of this.#cookies) if (timingSafeEqual(c, given)) ok = true
      if (ok) return true
    }
    return false
  }
}

/** The `token` field of an `application/x-www-form-urlencoded` body, or `undefined`. */
export function formToken(body: string): string | undefined {
  return new URLSearchParams(body).get('token') ?? undefined
}

/** Most clients remembered at once (the oldest forgotten first). */
const MAX_CLIENTS = 10_000

/**
 * Wrong tokens slowed down per client: after the n-th in a row, the client's next try is answered
 * `429` until 250 ms × 2^(n−1) have passed (at most a minute). A right token forgets the client.
 * So guessing runs at a few tries a minute, not thousands a second.
 */
export class SignInGuard {
  private readonly clients = new Map<string, { failures: number; until: number }>()

  /** ms this client must still wait (0: it may try). */
  wait(client: string, now: number): number {
    const c = this.clients.get(client)
    return c === undefined ? 0 : Math.max(0, c.until - now)
  }

  failed(client: string, now: number): void {
    const c = this.clients.get(client) ?? { failures: 0, until: 0 }
    c.failures++
    c.until = now + Math.min(60_000, 250 * 2 ** (c.failures - 1))
    this.clients.delete(client)
    this.clients.set(client, c)
    if (this.clients.size > MAX_CLIENTS) this.clients.delete(this.clients.keys().next().value as string)
  }

  succeeded(client: string): void {
    this.clients.delete(client)
  }
}
