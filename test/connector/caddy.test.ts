/**
 * The Caddyfile `airlock caddy-config` prints, in front of PHP-FPM, against a real Caddy (Debian's
 * caddy) and the decision service (issue 39): Caddy asks for every request to PHP; a `continue`
 * reaches PHP with the cookies the service set (both, when it sets two); anything else is the
 * service's answer passed through unchanged; the service down is a 503 the page retries.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { caddyConfig } from '../../src/connector/configs.js'
import { createDecisionService, type DecisionService } from '../../src/proxy/decide.js'
import { memoryStore } from '../../src/stores/memory.js'
import { hasCaddy, startCaddy, type Caddy } from '../helpers/caddy.js'
import { hasPhpFpm, startPhpFpm, type PhpFpm } from '../helpers/php-fpm.js'
import { freePort } from '../helpers/redis.js'
import { expectBothCookies, useTwoCookieService } from './two-cookies.js'

const SECRET = 'a-test-secret-of-at-least-32-bytes-0001'
const ready = (hasCaddy && hasPhpFpm) || process.env.CI === 'true'
const SITE = {
  'index.php': `<?php
file_put_contents(__DIR__ . '/hits.log', $_SERVER['REQUEST_METHOD'] . ' ' . $_SERVER['REQUEST_URI'] . ' ' . file_get_contents('php://input') . "\\n", FILE_APPEND | LOCK_EX);
header('Content-Type: text/plain');
echo "page from PHP\\n";
`,
  'style.css': 'body { color: black }\n',
}

async function get(url: string, cookie?: string, init: RequestInit = {}): Promise<Response> {
  return fetch(url, {
    ...init,
    headers: { ...(cookie ? { cookie } : {}), ...(init.headers as Record<string, string> | undefined) },
    redirect: 'manual',
    signal: AbortSignal.timeout(10_000),
  })
}

describe.skipIf(!ready)('Caddy forward-auth in front of PHP-FPM, airlock auth deciding (issue 39)', () => {
  let php: PhpFpm
  let service: DecisionService
  let caddy: Caddy
  let decisions = 0
  const hits = (): string[] =>
    readFileSync(join(php.root, 'hits.log'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
  beforeAll(async () => {
    php = await startPhpFpm(SITE)
    writeFileSync(join(php.root, 'hits.log'), '')
    const port = await freePort()
    service = await createDecisionService({
      limit: 1,
      queue: false,
      secret: SECRET,
      store: memoryStore(),
      clientShare: false,
    })
    service.server.on('request', () => decisions++)
    await service.listen({ port })
    caddy = await startCaddy((address) =>
      caddyConfig({
        origin: `fastcgi:${php.address}`,
        service: `127.0.0.1:${port}`,
        serverName: address,
        root: php.root,
      }),
    )
  }, 30_000)
  afterAll(async () => {
    await caddy?.stop()
    await service?.close()
    await php?.stop()
  })

  it('admits, confirms and lets in a visitor; static files never ask; the full site answers the real busy page', async () => {
    const first = await get(`${caddy.url}/index.php`, undefined, { method: 'POST', body: 'a=1' })
    expect(first.status).toBe(200)
    expect(await first.text()).toBe('page from PHP\n')
    expect(hits()).toContain('POST /index.php a=1')
    const provisional = first.headers
      .getSetCookie()
      .find((c) => c.startsWith('airlock_pass='))!
      .split(';')[0]!
    expect(first.headers.get('airlock-action')).toBeNull()
    // A query string comes along (Caddy's rewrite keeps it on the question): still a question.
    const second = await get(`${caddy.url}/index.php?p=42&s=hello`, provisional)
    expect(second.status).toBe(200)
    const full = second.headers
      .getSetCookie()
      .find((c) => c.startsWith('airlock_pass='))!
      .split(';')[0]!
    expect(full).toMatch(/~f~/)
    expect((await get(`${caddy.url}/index.php`, full)).status).toBe(200)
    const before = decisions
    expect(await (await get(`${caddy.url}/style.css`)).text()).toContain('color')
    expect(decisions).toBe(before)
    const count = hits().length
    const busy = await get(`${caddy.url}/index.php`, undefined, {
      headers: { 'accept-language': 'es', accept: 'text/html' },
    })
    expect(busy.status).toBe(503)
    expect(busy.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(busy.headers.get('content-language')).toBe('es')
    expect(busy.headers.get('airlock')).toBe('busy; reason=full; gate=default')
    expect(await busy.text()).toContain('<html')
    // A forged pass is no pass: the busy page, PHP never runs.
    const forged = full.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'))
    expect((await get(`${caddy.url}/index.php`, forged)).status).toBe(503)
    expect(hits().length).toBe(count)
  })

  it('the service down: a 503 with Retry-After, never the site', async () => {
    await service.close()
    const count = hits().length
    const r = await get(`${caddy.url}/index.php`)
    expect(r.status).toBe(503)
    expect(r.headers.get('retry-after')).toBe('5')
    expect(r.headers.get('airlock')).toBe('busy; reason=service-unavailable')
    expect(hits().length).toBe(count)
  })
})

describe.skipIf(!ready)('Caddy keeps every Set-Cookie of the decision (issue 39)', () => {
  const stubPort = useTwoCookieService()

  it('both cookies of a continue reach the visitor with the page; an answer (with cookies) is never taken for a continue', async () => {
    const php = await startPhpFpm(SITE)
    const caddy = await startCaddy((address) =>
      caddyConfig({
        origin: `fastcgi:${php.address}`,
        service: `127.0.0.1:${stubPort()}`,
        serverName: address,
        root: php.root,
      }),
    )
    try {
      await expectBothCookies(caddy.url)
    } finally {
      await caddy.stop()
      await php.stop()
    }
  })
})
