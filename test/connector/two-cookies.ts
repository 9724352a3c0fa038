/**
 * A decision service that sets two cookies on every answer (issue 39: nginx's `auth_request_set`
 * keeps only the first `Set-Cookie`, Caddy's placeholders one value): `continue` when the original
 * URI has `go` (200), else a busy answer (`503`, Retry-After 3). For njs and Caddy on
 * `/.airlock/decide`; for `auth_request` on `/.airlock/auth-request`, whose refusal is a `401` and
 * whose page is then fetched from `/.airlock/answer/<id>` (any path here).
 */
import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, expect } from 'vitest'
import { freePort } from '../helpers/redis.js'

export const TWO_COOKIES = ['one=1; Path=/', 'two=2; Path=/']

export async function twoCookieService(port: number): Promise<Server> {
  const [one, two] = TWO_COOKIES as [string, string]
  const server = createServer((req, res) => {
    const uri = String(req.headers['x-original-uri'] ?? req.headers['x-forwarded-uri'] ?? '')
    const path = (req.url ?? '').split('?')[0]
    const asking = path === '/.airlock/decide' || path === '/.airlock/auth-request'
    if (asking && uri.includes('go')) {
      res.writeHead(200, {
        'airlock-action': 'continue',
        'set-cookie': TWO_COOKIES,
        'airlock-cookie-1': one,
        'airlock-cookie-2': two,
      })
      res.end()
      return
    }
    if (path === '/.airlock/auth-request') {
      res.writeHead(401, { 'airlock-action': 'answer', 'airlock-answer': 'abc' })
      res.end()
      return
    }
    res.writeHead(503, {
      'airlock-action': 'answer',
      'retry-after': '3',
      'content-type': 'text/html',
      'set-cookie': TWO_COOKIES,
      'airlock-cookie-1': one,
      'airlock-cookie-2': two,
      'x-accel-expires': '0',
    })
    res.end('<html>busy</html>')
  })
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r))
  return server
}

/** In a `describe`: the service on a free port for its tests (closed after them); resolves the port. */
export function useTwoCookieService(): () => number {
  let server: Server | undefined
  let port = 0
  beforeAll(async () => {
    port = await freePort()
    server = await twoCookieService(port)
  })
  afterAll(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())))
  return () => port
}

/**
 * Through the proxy at `base` (PHP's page behind it), against {@link twoCookieService}: a continue
 * reaches the page with both cookies; an answer (with its cookies) is sent as it is, never taken
 * for a continue.
 */
export async function expectBothCookies(base: string): Promise<void> {
  const get = (path: string) => fetch(`${base}${path}`, { redirect: 'manual', signal: AbortSignal.timeout(10_000) })
  const go = await get('/index.php?go')
  expect(go.status).toBe(200)
  expect(await go.text()).toBe('page from PHP\n')
  expect(go.headers.getSetCookie()).toEqual(expect.arrayContaining(TWO_COOKIES))
  const busy = await get('/index.php?stay')
  expect(busy.status).toBe(503)
  expect(busy.headers.get('retry-after')).toBe('3')
  expect(busy.headers.getSetCookie()).toEqual(TWO_COOKIES)
  expect(await busy.text()).toBe('<html>busy</html>')
}
