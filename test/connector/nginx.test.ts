/**
 * The nginx connector against the real parts a site runs (issue 39): Debian's nginx with its njs
 * module (libnginx-mod-http-js), the configuration `airlock nginx-config` prints, PHP-FPM behind
 * it, and the decision service (`createDecisionService`, what `airlock auth` runs). A valid pass
 * reaches PHP without asking the service; a forged, expired, foreign, provisional or due one never
 * does; refusals are the gate's real pages with their headers and cookies; the service down is
 * nginx's own busy page (or, `--fail open`, the site); secrets rotate without dropping passes.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent, fetch as undiciFetch } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nginxConfig } from '../../src/connector/configs.js'
import { njsSettings, NJS_MODULE } from '../../src/connector/njs.js'
import { createSigner } from '../../src/base/signing.js'
import { encodePass, PASS_CONTEXT } from '../../src/gate/pass.js'
import { createDecisionService, type DecisionService } from '../../src/proxy/decide.js'
import { memoryStore } from '../../src/stores/memory.js'
import { hasNginx, hasNjs, startNginxWith, type Nginx } from '../helpers/nginx.js'
import { hasPhpFpm, startPhpFpm, type PhpFpm } from '../helpers/php-fpm.js'
import { freePort } from '../helpers/redis.js'
import { expectBothCookies, useTwoCookieService } from './two-cookies.js'

const SECRET = 'a-test-secret-of-at-least-32-bytes-0001'
const OLD_SECRET = 'an-older-secret-of-at-least-32-bytes-02'
const ready = (hasNginx && hasNjs && hasPhpFpm) || process.env.CI === 'true'

/** The PHP site: a page that logs each request it runs (method, path, body) and a static file. */
const SITE = {
  'index.php': `<?php
file_put_contents(__DIR__ . '/hits.log', $_SERVER['REQUEST_METHOD'] . ' ' . $_SERVER['REQUEST_URI'] . ' ' . file_get_contents('php://input') . "\\n", FILE_APPEND | LOCK_EX);
header('Content-Type: text/plain');
echo "page from PHP\\n";
`,
  'style.css': 'body { color: black }\n',
}

interface Site {
  nginx: Nginx & { dir: string }
  service: DecisionService | undefined
  decisions: () => number
  hits: () => string[]
  stop(): Promise<void>
}

/** PHP-FPM + the decision service + nginx with the generated configuration. */
async function site(
  php: PhpFpm,
  options: {
    limit?: number
    queue?: boolean
    check?: 'njs' | 'auth_request'
    fail?: 'closed' | 'open'
    secrets?: string[]
    serviceSecrets?: string[]
    refusalCache?: number
  } = {},
): Promise<Site> {
  const port = await freePort()
  const service = await createDecisionService({
    limit: options.limit ?? 2,
    queue: options.queue ?? false,
    secret: options.serviceSecrets ?? options.secrets ?? [SECRET],
    store: memoryStore(),
    refusalCache: options.refusalCache ?? 1,
    clientShare: false,
  })
  let decisions = 0
  service.server.on('request', (req) => {
    if (req.url?.startsWith('/.airlock/')) decisions++
  })
  await service.listen({ port })
  const dir = mkdtempSync(join(tmpdir(), 'airlock-njs-'))
  writeFileSync(join(dir, 'airlock.js'), NJS_MODULE)
  const settings = njsSettings(service.gate, options.secrets ?? [SECRET], options.fail ?? 'closed')
  writeFileSync(join(dir, 'airlock.json'), JSON.stringify(settings))
  writeFileSync(join(dir, 'busy.html'), settings.busyPage)
  const nginx = await startNginxWith((listen, own) =>
    nginxConfig({
      origin: `fastcgi:${php.address}`,
      service: `127.0.0.1:${port}`,
      listen: `127.0.0.1:${listen}`,
      root: php.root,
      dir,
      cacheDir: join(own, 'cache'),
      check: options.check ?? 'njs',
      fail: options.fail ?? 'closed',
    }),
  )
  writeFileSync(join(php.root, 'hits.log'), '')
  return {
    nginx,
    service,
    decisions: () => decisions,
    hits: () =>
      readFileSync(join(php.root, 'hits.log'), 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
    async stop() {
      await nginx.stop()
      await service.close()
    },
  }
}

/** A pass value as the service signs them (`secret`, this gate, `expiresAt`, full or provisional). */
function passValue(
  secret: string,
  expiresAt: number,
  provisional = false,
  gate = 'default',
  token = 'some-token',
): string {
  return encodePass(createSigner({ secrets: [secret], context: PASS_CONTEXT }), { gate, token, expiresAt, provisional })
}

const agents = new Map<string, Agent>()
/** A request from the loopback address `address` (nginx's $remote_addr: a client of its own). */
async function fromAddress(
  address: string,
  url: string,
  cookie?: string,
): Promise<{ status: number; language: string | null; retryAfter: string | null; airlock: string | null }> {
  let agent = agents.get(address)
  if (agent === undefined) agents.set(address, (agent = new Agent({ localAddress: address })))
  const r = await undiciFetch(url, {
    dispatcher: agent,
    headers: cookie ? { cookie } : {},
    signal: AbortSignal.timeout(20_000),
  })
  await r.text()
  return {
    status: r.status,
    language: r.headers.get('content-language'),
    retryAfter: r.headers.get('retry-after'),
    airlock: r.headers.get('airlock'),
  }
}

async function get(url: string, cookie?: string, init: RequestInit = {}): Promise<Response> {
  return fetch(url, {
    ...init,
    headers: { ...(cookie ? { cookie } : {}), ...(init.headers as Record<string, string> | undefined) },
    redirect: 'manual',
    signal: AbortSignal.timeout(10_000),
  })
}

/** Fills the site: `limit` newcomers, each confirmed once (a full pass). Resolves their full-pass cookies. */
async function fill(url: string, limit: number): Promise<string[]> {
  const passes: string[] = []
  for (let i = 0; i < limit; i++) {
    const first = await get(`${url}/index.php`)
    expect(first.status).toBe(200)
    const provisional = first.headers.getSetCookie()[0]!.split(';')[0]!
    const second = await get(`${url}/index.php`, provisional)
    expect(second.status).toBe(200)
    passes.push(second.headers.getSetCookie()[0]!.split(';')[0]!)
  }
  return passes
}

describe.skipIf(!ready)('nginx + njs in front of PHP-FPM, airlock auth deciding (issue 39)', () => {
  let php: PhpFpm
  let s: Site
  beforeAll(async () => {
    php = await startPhpFpm(SITE)
    s = await site(php)
  }, 30_000)
  afterAll(async () => {
    await s?.stop()
    await php?.stop()
  })

  it('admits a newcomer through the service, upgrades its pass there, then lets the pass through without asking', async () => {
    const before = s.decisions()
    const first = await get(`${s.nginx.url}/index.php`)
    expect(first.status).toBe(200)
    expect(await first.text()).toBe('page from PHP\n')
    const provisional = first.headers.getSetCookie()[0]!.split(';')[0]!
    expect(provisional).toMatch(/^airlock_pass=p1~default~.*~p~/)
    expect(s.decisions()).toBe(before + 1)
    // The provisional pass asks once more (confirmed: a full pass).
    const second = await get(`${s.nginx.url}/index.php`, provisional)
    expect(second.status).toBe(200)
    const full = second.headers.getSetCookie()[0]!.split(';')[0]!
    expect(full).toMatch(/~f~/)
    expect(s.decisions()).toBe(before + 2)
    for (let i = 0; i < 20; i++) expect((await get(`${s.nginx.url}/index.php?n=${i}`, full)).status).toBe(200)
    expect(s.decisions()).toBe(before + 2)
    // A static file never asks.
    expect(await (await get(`${s.nginx.url}/style.css`)).text()).toContain('color')
    expect(s.decisions()).toBe(before + 2)
  })
})

describe.skipIf(!ready)('nginx + njs: what never reaches PHP, and what the visitor gets (issue 39)', () => {
  let php: PhpFpm
  let s: Site
  let passes: string[]
  beforeAll(async () => {
    php = await startPhpFpm(SITE)
    s = await site(php, { limit: 2 })
    passes = await fill(s.nginx.url, 2)
  }, 30_000)
  afterAll(async () => {
    await s?.stop()
    await php?.stop()
  })

  it('a forged, expired, foreign, provisional or due pass never reaches PHP while the site is full', async () => {
    const now = Date.now()
    const ttl = s.service!.gate.passTtl
    const valid = passValue(SECRET, now + ttl)
    const forged = `${valid.slice(0, -2)}${valid.endsWith('AA') ? 'BA' : 'AA'}`
    const cases = {
      forged,
      'signed with another secret': passValue('not-the-secret-but-at-least-32-bytes-long', now + ttl),
      expired: passValue(SECRET, now - 1000),
      'of another gate': passValue(SECRET, now + ttl, false, 'other'),
      provisional: passValue(SECRET, now + 10_000, true),
      'due for renewal (its slot gone)': passValue(SECRET, now + ttl / 4),
      'over-long': `p1~default~${'x'.repeat(400)}~${(now + ttl).toString(36)}~f~${'A'.repeat(43)}`,
      junk: '%00%ff<script>',
    }
    const hitsBefore = s.hits().length
    for (const [name, value] of Object.entries(cases)) {
      const r = await get(`${s.nginx.url}/index.php?case=${encodeURIComponent(name)}`, `airlock_pass=${value}`)
      expect(r.status, name).toBe(503)
      expect(await r.text(), name).not.toContain('page from PHP')
    }
    expect(s.hits().length).toBe(hitsBefore)
    // The real passes still get in, also behind another cookie of the same name (a browser keeps one per path).
    for (const p of passes) expect((await get(`${s.nginx.url}/index.php`, p)).status).toBe(200)
    const asked = s.decisions()
    expect((await get(`${s.nginx.url}/index.php`, `airlock_pass=${forged}; ${passes[0]}`)).status).toBe(200)
    expect(s.decisions()).toBe(asked)
    expect(s.hits().length).toBe(hitsBefore + 3)
  })

  it("a refusal is the gate's real busy page: 503, Retry-After, the visitor's language", async () => {
    const r = await get(`${s.nginx.url}/index.php`, undefined, {
      headers: { 'accept-language': 'de-DE,de;q=0.9', accept: 'text/html' },
    })
    expect(r.status).toBe(503)
    expect(r.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(r.headers.get('content-type')).toMatch(/text\/html/)
    expect(r.headers.get('content-language')).toBe('de')
    expect(r.headers.get('airlock-action')).toBeNull()
    const body = await r.text()
    expect(body).toContain('<html')
    expect(body).toMatch(/lang="de"/)
  })

  it("a refusal that is everyone's is kept a second by nginx: a crowd costs the service one decision a second", async () => {
    await new Promise((r) => setTimeout(r, 1100))
    const before = s.decisions()
    const t0 = Date.now()
    // A crowd: 40 visitors, each from an address of its own.
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        fromAddress(`127.0.9.${10 + i}`, `${s.nginx.url}/index.php`).then((r) => r.status),
      ),
    )
    expect(answers.every((x) => x === 503)).toBe(true)
    // One decision for each second the crowd lasted (2 on a quiet box), whatever a loaded box takes.
    expect(s.decisions() - before).toBeLessThanOrEqual(1 + Math.ceil((Date.now() - t0) / 1000))
    expect(s.decisions() - before).toBeLessThan(20)
    // A visitor with a cookie of the gate is never answered from the cache.
    const personal = s.decisions()
    await get(`${s.nginx.url}/index.php`, 'airlock_ticket=whatever')
    expect(s.decisions()).toBe(personal + 1)
  })

  it('a client that retries at once is paced by nginx: past its burst, nginx answers its own busy page without asking', async () => {
    const before = s.decisions()
    const t0 = Date.now()
    const answers = await Promise.all(
      Array.from({ length: 70 }, (_, i) =>
        fromAddress('127.0.9.200', `${s.nginx.url}/index.php?n=${i}`, 'airlock_ticket=x'),
      ),
    )
    expect(answers.every((r) => r.status === 503)).toBe(true)
    const fromNginx = answers.filter((r) => r.language === null)
    expect(fromNginx.length).toBeGreaterThanOrEqual(70 - 51)
    for (const r of fromNginx)
      expect([r.retryAfter, r.airlock], JSON.stringify(fromNginx)).toEqual(['5', 'busy; reason=client-rate'])
    // The rest are the service's answers: the gate's reason (the ticket is forged, so: a newcomer's).
    for (const r of answers.filter((a) => a.language !== null))
      expect(r.airlock).toMatch(/^busy; reason=(full|client-share); gate=default$/)
    // The rest waited their turn (5 a second): the service was asked only for those.
    expect(s.decisions() - before).toBeLessThanOrEqual(51)
    expect(Date.now() - t0).toBeGreaterThan(5_000)
  }, 30_000)

  it('the secret rotates without dropping passes: the old one still checked while both are listed', async () => {
    const php2 = await startPhpFpm(SITE)
    const rotated = await site(php2, { limit: 5, secrets: [SECRET, OLD_SECRET] })
    try {
      const old = passValue(OLD_SECRET, Date.now() + 60_000)
      const before = rotated.decisions()
      expect((await get(`${rotated.nginx.url}/index.php`, `airlock_pass=${old}`)).status).toBe(200)
      expect(rotated.decisions()).toBe(before)
    } finally {
      await rotated.stop()
      await php2.stop()
    }
    const php3 = await startPhpFpm(SITE)
    const dropped = await site(php3, { limit: 5, secrets: [SECRET] })
    try {
      const before = dropped.decisions()
      await get(`${dropped.nginx.url}/index.php`, `airlock_pass=${passValue(OLD_SECRET, Date.now() + 60_000)}`)
      expect(dropped.decisions()).toBe(before + 1) // no longer checked in nginx: the service decides
    } finally {
      await dropped.stop()
      await php3.stop()
    }
  })
})

describe.skipIf(!ready)('nginx + njs: a POST, the waiting room, the service down (issue 39)', () => {
  it('a newcomer admitted on a POST reaches PHP with its method and body', async () => {
    const php = await startPhpFpm(SITE)
    const s = await site(php)
    try {
      const r = await get(`${s.nginx.url}/index.php?form`, undefined, {
        method: 'POST',
        body: 'name=ada&x=1',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      })
      expect(r.status).toBe(200)
      expect(s.hits()).toContain('POST /index.php?form name=ada&x=1')
    } finally {
      await s.stop()
      await php.stop()
    }
  })

  it('the waiting room through nginx: the 202 page with its ticket, the poll answered by the service', async () => {
    const php = await startPhpFpm(SITE)
    const s = await site(php, { limit: 1, queue: true })
    try {
      await fill(s.nginx.url, 1)
      const hits = s.hits().length
      const r = await get(`${s.nginx.url}/index.php`, undefined, { headers: { accept: 'text/html' } })
      expect(r.status).toBe(202)
      const ticket = r.headers
        .getSetCookie()
        .find((c) => c.startsWith('airlock_ticket='))!
        .split(';')[0]!
      expect(await r.text()).toContain('<html')
      const poll = await get(`${s.nginx.url}/index.php`, ticket, {
        headers: { 'x-airlock-poll': '1', accept: 'application/json' },
      })
      expect(poll.status).toBe(202)
      expect(await poll.json()).toMatchObject({ status: 'queued', position: 1 })
      expect(s.hits().length).toBe(hits)
    } finally {
      await s.stop()
      await php.stop()
    }
  })

  it("the service down: newcomers get nginx's own busy page (fail closed), pass holders keep getting in", async () => {
    const php = await startPhpFpm(SITE)
    const s = await site(php)
    try {
      const [pass] = await fill(s.nginx.url, 1)
      await s.service!.close()
      const r = await get(`${s.nginx.url}/index.php`)
      expect(r.status).toBe(503)
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/)
      expect(r.headers.get('airlock')).toBe('busy; reason=service-unavailable; gate=default')
      expect(await r.text()).toContain('<html')
      expect((await get(`${s.nginx.url}/index.php`, pass)).status).toBe(200)
    } finally {
      await s.nginx.stop()
      await php.stop()
    }
  })

  it('the service down with --fail open: newcomers reach the site', async () => {
    const php = await startPhpFpm(SITE)
    const s = await site(php, { fail: 'open' })
    try {
      await s.service!.close()
      const r = await get(`${s.nginx.url}/index.php`)
      expect(r.status).toBe(200)
      expect(await r.text()).toBe('page from PHP\n')
    } finally {
      await s.nginx.stop()
      await php.stop()
    }
  })
})

describe.skipIf(!ready)('nginx keeps every Set-Cookie of the decision (issue 39)', () => {
  const stubPort = useTwoCookieService()

  for (const check of ['njs', 'auth_request'] as const) {
    it(`${check}: both cookies of a continue and of an answer reach the visitor`, async () => {
      const php = await startPhpFpm(SITE)
      const dir = mkdtempSync(join(tmpdir(), 'airlock-njs-'))
      writeFileSync(join(dir, 'airlock.js'), NJS_MODULE)
      writeFileSync(
        join(dir, 'airlock.json'),
        JSON.stringify({
          gate: 'default',
          cookie: 'airlock_pass',
          ticket: 'airlock_ticket',
          passTtl: 60_000,
          secrets: [SECRET],
          fail: 'closed',
          retryAfter: 5,
          busyPage: 'busy',
        }),
      )
      writeFileSync(join(dir, 'busy.html'), 'busy')
      const nginx = await startNginxWith((listen, own) =>
        nginxConfig({
          origin: `fastcgi:${php.address}`,
          service: `127.0.0.1:${stubPort()}`,
          listen: `127.0.0.1:${listen}`,
          root: php.root,
          dir,
          cacheDir: join(own, 'cache'),
          check,
        }),
      )
      try {
        await expectBothCookies(nginx.url)
      } finally {
        await nginx.stop()
        await php.stop()
      }
    })
  }
})

describe.skipIf(!ready)('nginx auth_request (no njs), in front of PHP-FPM (issue 39)', () => {
  it('every request asks; admitted ones reach PHP with the pass, refused ones get the real page', async () => {
    const php = await startPhpFpm(SITE)
    const s = await site(php, { check: 'auth_request', limit: 1 })
    try {
      const [pass] = await fill(s.nginx.url, 1)
      const before = s.decisions()
      expect((await get(`${s.nginx.url}/index.php`, pass)).status).toBe(200)
      expect(s.decisions()).toBe(before + 1)
      const r = await get(`${s.nginx.url}/index.php?page=2&q=a%20b`, undefined, {
        headers: { 'accept-language': 'fr', accept: 'text/html' },
      })
      expect(r.status).toBe(503)
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/)
      expect(r.headers.get('content-language')).toBe('fr')
      expect(r.headers.get('airlock')).toBe('busy; reason=full; gate=default')
      expect(await r.text()).toContain('<html')
      await s.service!.close()
      const down = await get(`${s.nginx.url}/index.php`)
      expect(down.status).toBe(503)
      expect(down.headers.get('retry-after')).toBe('5')
      expect(down.headers.get('airlock')).toBe('busy; reason=service-unavailable')
    } finally {
      await s.nginx.stop()
      await php.stop()
    }
  })
})
