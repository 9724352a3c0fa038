/**
 * Signing in to the dashboard without putting the token in a URL (issue 25): a small form that
 * POSTs it (the answer sets the dashboard cookie), and a per-client slow-down of failed attempts.
 */
import type { IncomingMessage } from 'node:http'
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
    (wrong ? '<p role="alert">That token is not right.</p>' : '<p>Paste the dashboard token (AIRLOCK_DASHBOARD_TOKEN).</p>') +
    '<form method="post"><label for="t">Token</label> <input id="t" name="token" type="password" autocomplete="current-password" required autofocus>' +
    ' <button>Sign in</button></form></main></body></html>'
  )
}

/** The `token` field of a small `application/x-www-form-urlencoded` body, or `undefined`. */
export async function postedToken(req: IncomingMessage): Promise<string | undefined> {
  let body = ''
  for await (const chunk of req) {
    body += String(chunk)
    if (body.length > 1024) return undefined
  }
  return new URLSearchParams(body).get('token') ?? undefined
}

/** Most clients remembered at once (the oldest forgotten first). */
const MAX_CLIENTS = 10_000

/**
 * Failed sign-ins slowed down per client: after the n-th failure in a row, the client's next try is
 * answered `429` until 250 ms × 2^(n−1) have passed (at most a minute), whatever token it sends. A
 * success forgets the client. So guessing runs at a few tries a minute, not thousands a second.
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
