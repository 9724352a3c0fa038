/**
 * The HTTP behaviour of the gate's waiting room (the `queue` option, issue 5), run against every
 * adapter over real HTTP: tickets, positions, FIFO admission, leavers, forged tickets, maxLength,
 * random order, the waiting page's poll, and (on Redis) one line shared by two instances.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { isAirlockError } from '../../src/base/errors.js'
import { createGate } from '../../src/gate/gate.js'
import { createSigner } from '../../src/base/signing.js'
import { encodeTicket, TICKET_CONTEXT } from '../../src/gate/ticket.js'
import { memoryStore } from '../../src/stores/memory.js'
import { redisStore } from '../../src/stores/redis.js'
import { WAITING_PAGE_SCRIPT, waitingPageHashes } from '../../src/pages/waiting.js'
import type { VisitorLanguage } from '../../src/pages/language.js'
import { requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { recordingLogger } from '../helpers/stores.js'
import { sleep, until } from '../helpers/wait.js'
import {
  Browser,
  getAndHead,
  hit,
  nextAddress,
  SECRET,
  startApp,
  useApps,
  type AdapterName,
  type AppSetup,
  type TestApp,
} from './harness.js'

const JSON_ACCEPT = { accept: 'application/json' }

/** A browser-like visitor that asks for JSON (an API client keeping cookies). */
async function place(visitor: Browser, path = '/kind'): Promise<{ status: number; body: unknown; cookies: string[] }> {
  const r = await visitor.get(path, { headers: JSON_ACCEPT })
  let body: unknown = r.body
  try {
    body = JSON.parse(r.body)
  } catch {
    // the route's plain-text answer
  }
  return { status: r.status, body, cookies: r.cookies }
}

function ticketOf(visitor: Browser): string | undefined {
  return visitor.jar.get('airlock_ticket')
}

function forgeTicket(
  fields: { gate?: string; visitorId: string; issuedAt?: number },
  secret = SECRET,
  context = TICKET_CONTEXT,
): string {
  return encodeTicket(createSigner({ secrets: secret, context }), {
    gate: fields.gate ?? 'default',
    visitorId: fields.visitorId,
    issuedAt: fields.issuedAt ?? Date.now(),
  })
}

export function waitingRoomBehaviour(adapter: AdapterName): void {
  const startGate = useApps(adapter)
  const start = (gate: AppSetup['gate']): Promise<TestApp> =>
    startGate({ gate: { store: memoryStore(), secret: SECRET, logger: recordingLogger(), ...gate } })

  /** An app with limit 1 whose slot is held by the returned visitor. */
  const full = async (gate: AppSetup['gate'] = {}): Promise<{ app: TestApp; holder: Browser }> => {
    const app = await start({ limit: 1, queue: true, ...gate })
    const holder = new Browser(app.url)
    expect((await holder.get('/kind')).body).toBe('admit')
    return { app, holder }
  }

  describe(`${adapter}: pages in the visitor's language`, () => {
    it('Accept-Language: de gives German busy and waiting pages (lang, Content-Language, Vary); ar is right to left; xx is English', async () => {
      const busyApp = await start({ limit: 1 })
      expect((await new Browser(busyApp.url).get('/kind')).body).toBe('admit')
      const busy = await new Browser(busyApp.url).get('/', {
        headers: { 'accept-language': 'de-AT,de;q=0.9,en;q=0.5' },
      })
      expect(busy.status).toBe(503)
      expect(busy.body).toMatch(/^<!doctype html><html lang="de" dir="ltr">/)
      expect(busy.body).toContain('<h1>Gerade ist sehr viel los</h1>')
      expect(busy.headers.get('content-language')).toBe('de')
      expect(busy.headers.get('vary')).toBe('Accept, Accept-Language')
      const json = await new Browser(busyApp.url).get('/', { headers: { 'accept-language': 'de', ...JSON_ACCEPT } })
      expect(json.status).toBe(503)
      expect(json.headers.get('content-language')).toBeNull()

      const { app } = await full()
      const german = await new Browser(app.url).get('/', { headers: { 'accept-language': 'de' } })
      expect(german.status).toBe(202)
      expect(german.body).toMatch(/^<!doctype html><html lang="de" dir="ltr">/)
      expect(german.body).toContain('Ihr Platz in der Warteschlange: <b id="p">1</b> von <span id="w">1</span>')
      expect(german.headers.get('content-language')).toBe('de')
      expect(german.headers.get('vary')).toBe('Accept, Accept-Language')
      expect(german.headers.get('content-security-policy')).toContain(waitingPageHashes.script)

      const arabic = await new Browser(app.url).get('/', { headers: { 'accept-language': 'ar-EG' } })
      expect(arabic.body).toMatch(/^<!doctype html><html lang="ar" dir="rtl">/)
      expect(arabic.headers.get('content-language')).toBe('ar')
      for (const header of ['xx', '', '*', ';;;,q=5']) {
        const english = await new Browser(app.url).get('/', { headers: { 'accept-language': header } })
        expect(english.body, header).toMatch(/^<!doctype html><html lang="en" dir="ltr">/)
        expect(english.body, header).toContain('Your place in line:')
        expect(english.headers.get('content-language'), header).toBe('en')
      }
    })

    it('the messages option changes the words; a bad one is refused at startup', async () => {
      const { app } = await full({ messages: { de: { inLine: 'Bitte anstellen' } } })
      const r = await new Browser(app.url).get('/', { headers: { 'accept-language': 'de' } })
      expect(r.body).toContain('<h1>Bitte anstellen</h1>')
      await expect(start({ messages: { de: { inLinee: 'x' } } as never })).rejects.toThrow(
        /messages\.de has no option 'inLinee'/,
      )
    })

    it('custom busyPage and queue.page are told the language (tag, dir, number, eta, words); the answer says it (Content-Language, Vary)', async () => {
      const page = ({ language: l }: { language: VisitorLanguage }, what: string): string =>
        `<html lang="${l.tag}" dir="${l.dir}">${what} ${l.number(12345)} / ${l.eta(180)} / ${l.html('tryNow')}</html>`
      const busyApp = await start({
        limit: 1,
        messages: { 'pt-BR': { tryNow: 'Tentar agora' } },
        busyPage: (c) => page(c, `busy ${c.retryAfter}`),
      })
      expect((await new Browser(busyApp.url).get('/kind')).body).toBe('admit')
      const busy = await new Browser(busyApp.url).get('/', { headers: { 'accept-language': 'de-AT,de;q=0.9' } })
      expect([busy.status, busy.body]).toEqual([
        503,
        '<html lang="de" dir="ltr">busy 5 12.345 / etwa 3 Minuten / Jetzt erneut versuchen</html>',
      ])
      expect(busy.headers.get('content-language')).toBe('de')
      expect(busy.headers.get('vary')).toBe('Accept, Accept-Language')
      const brazil = await new Browser(busyApp.url).get('/', { headers: { 'accept-language': 'pt-BR' } })
      expect(brazil.body).toMatch(/^<html lang="pt-BR" dir="ltr">busy 5 12\.345 \/ .* \/ Tentar agora<\/html>$/)
      const english = await new Browser(busyApp.url).get('/', { headers: { 'accept-language': 'xx' } })
      expect(english.body).toBe('<html lang="en" dir="ltr">busy 5 12,345 / about 3 minutes / Try now</html>')

      const { app } = await full({ queue: { page: (c) => page(c, `place ${c.language.number(c.position ?? 0)}`) } })
      const arabic = await new Browser(app.url).get('/', { headers: { 'accept-language': 'ar' } })
      expect(arabic.status).toBe(202)
      const ar = new Intl.NumberFormat('ar', { maximumFractionDigits: 0 })
      expect(arabic.body.startsWith(`<html lang="ar" dir="rtl">place ${ar.format(1)} ${ar.format(12345)} / `)).toBe(
        true,
      )
      expect(arabic.headers.get('content-language')).toBe('ar')
      expect(arabic.headers.get('vary')).toBe('Accept, Accept-Language')
    })
  })

  describe(`${adapter}: waiting room`, () => {
    it('gives a queued browser 202 and a tiny self-contained waiting page with its position; the route never runs', async () => {
      const { app } = await full()
      const runs = app.stats.runs
      const visitor = new Browser(app.url)
      const r = await visitor.get('/')
      expect(r.status).toBe(202)
      expect(r.headers.get('cache-control')).toBe('no-store')
      expect(r.headers.get('retry-after')).toBe('2')
      expect(r.headers.get('content-type')).toMatch(/^text\/html/)
      expect(Buffer.byteLength(r.body)).toBeLessThan(4096)
      expect(r.body).toContain('Your place in line: <b id="p">1</b>')
      expect(r.body).toMatch(/<noscript><meta http-equiv="refresh" content="\d+"><\/noscript>/)
      expect(r.body.replace(WAITING_PAGE_SCRIPT, '')).not.toMatch(/src=|href=/) // no external assets (the script sets a data: favicon once admitted)
      const csp = r.headers.get('content-security-policy')!
      expect(csp).toContain(waitingPageHashes.script)
      expect(csp).toContain(waitingPageHashes.style)
      expect(csp).toContain("connect-src 'self'")
      const ticket = r.cookies.find((c) => c.startsWith('airlock_ticket='))!
      expect(ticket).toMatch(
        /^airlock_ticket=t1~default~[A-Za-z0-9_-]{22}~[0-9a-z]+~[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax$/,
      )
      expect(app.stats.runs).toBe(runs)
      const head = await visitor.get('/', { method: 'HEAD' })
      expect([head.status, head.body]).toEqual([202, ''])
    })

    it('answers HEAD with the headers of the GET to the same request (CSP, Content-Length of its body), and no body', async () => {
      const { app } = await full()
      const visitor = new Browser(app.url)
      expect((await visitor.get('/')).status).toBe(202) // takes a place: the ticket is in the jar
      for (const accept of ['text/html,application/xhtml+xml,*/*;q=0.8', 'application/json']) {
        const r = await getAndHead(`${app.url}/`, { accept, cookie: visitor.cookieHeader() })
        expect([r.getStatus, r.headStatus, r.headBody]).toEqual([202, 202, ''])
        expect(r.get['content-length']).toBe(String(r.getLength))
        expect(r.head).toEqual(r.get)
      }
    })

    it('answers JSON { status, position, eta, waiting } with eta in seconds; re-entering with the ticket keeps the place', async () => {
      const { app } = await full()
      const a = new Browser(app.url)
      const b = new Browser(app.url)
      expect(await place(a)).toMatchObject({
        status: 202,
        body: { status: 'queued', position: 1, eta: null, waiting: 1 },
      })
      expect(await place(b)).toMatchObject({ status: 202, body: { status: 'queued', position: 2, waiting: 2 } })
      const ticket = ticketOf(a)
      for (let i = 0; i < 3; i++) {
        const again = await place(a)
        expect(again).toMatchObject({ status: 202, body: { position: 1, waiting: 2 } })
        expect(again.cookies).toEqual([]) // the same ticket, never a second place
      }
      expect(ticketOf(a)).toBe(ticket)
      expect(app.stats.runs).toBe(0) // `/` never ran for a queued visitor
      expect((await place(a, '/')).status).toBe(202)
      expect(app.stats.runs).toBe(0)
    })

    it('"Leave the line" (POST ?__airlock=leave from the site): the place is gone at once, the ticket cleared, those behind move up; a cross-site POST leaves nobody', async () => {
      const { app } = await full()
      const a = new Browser(app.url)
      const b = new Browser(app.url)
      expect(await place(a)).toMatchObject({ body: { position: 1 } })
      expect(await place(b)).toMatchObject({ body: { position: 2 } })
      const leave = (v: Browser, headers: Record<string, string>) =>
        v.get('/kind?__airlock=leave', { method: 'POST', headers: { ...JSON_ACCEPT, ...headers } })
      const forged = await leave(a, { origin: 'http://evil.example' })
      expect(forged.status).toBe(403)
      expect((await leave(a, { 'sec-fetch-site': 'cross-site' })).status).toBe(403)
      expect(await place(b)).toMatchObject({ body: { position: 2 } })
      const ticket = ticketOf(a)
      const left = await leave(a, { 'sec-fetch-site': 'same-origin', origin: app.url })
      expect([left.status, left.body]).toEqual([200, '{"status":"left"}'])
      expect(left.cookies.some((c) => /^airlock_ticket=;.*Max-Age=0/.test(c))).toBe(true)
      expect(await place(b)).toMatchObject({ status: 202, body: { position: 1, waiting: 1 } })
      expect(app.stats.runs).toBe(0)
      // A poll sent before the leave, arriving after it (with the ticket the browser still had): no new place.
      const late = await a.get('/kind', {
        headers: { ...JSON_ACCEPT, 'x-airlock-poll': '1', cookie: `airlock_ticket=${ticket}` },
      })
      expect([late.status, late.body]).toEqual([200, '{"status":"left"}'])
      expect(await place(b)).toMatchObject({ status: 202, body: { position: 1, waiting: 1 } })
      expect(app.stats.runs).toBe(0)
    })

    it('admits in arrival order: a freed slot waits for the head; later arrivals and newcomers cannot jump in', async () => {
      const { app, holder } = await full()
      const line = [new Browser(app.url), new Browser(app.url), new Browser(app.url)]
      for (const [i, v] of line.entries()) expect((await place(v)).body).toMatchObject({ position: i + 1 })
      for (const [i, v] of line.entries()) expect((await place(v)).body).toMatchObject({ position: i + 1 }) // first polls
      expect((await holder.get('/logout', { method: 'POST' })).body).toBe('released=true')
      // The slot is reserved for the head: the second and a newcomer stay queued.
      expect(await place(line[1]!)).toMatchObject({ status: 202, body: { position: 2 } })
      const newcomer = new Browser(app.url)
      expect(await place(newcomer)).toMatchObject({ status: 202, body: { position: 4, waiting: 4 } })
      // The head comes back: the route runs for it, with a pass.
      const admitted = await place(line[0]!)
      expect(admitted.status).toBe(200)
      expect(admitted.body).toBe('admit')
      expect(line[0]!.jar.get('airlock_pass')).toMatch(/~p~/)
      expect((await line[0]!.get('/kind')).body).toBe('pass')
      // Those behind move up.
      expect(await place(line[1]!)).toMatchObject({ status: 202, body: { position: 1, waiting: 3 } })
      expect(await place(newcomer)).toMatchObject({ status: 202, body: { position: 3 } })
      expect((await line[0]!.get('/logout', { method: 'POST' })).body).toBe('released=true')
      expect(await place(line[2]!)).toMatchObject({ status: 202, body: { position: 2 } })
      expect((await place(line[1]!)).status).toBe(200)
    })

    it("the waiting page's poll is answered 200 {status:'admitted', hold} with the pass, without running the route", async () => {
      const { app, holder } = await full()
      const visitor = new Browser(app.url)
      await visitor.get('/')
      const poll = { accept: 'application/json', 'x-airlock-poll': '1' }
      const queued = await visitor.get('/', { headers: poll })
      expect([queued.status, JSON.parse(queued.body).status]).toEqual([202, 'queued'])
      await holder.get('/logout', { method: 'POST' })
      const runs = app.stats.runs
      const admitted = await visitor.get('/', { headers: poll })
      expect(admitted.status).toBe(200)
      // A hidden page may wait half the pass's life (passTtl: 60 s by default) before using it.
      expect(JSON.parse(admitted.body)).toEqual({ status: 'admitted', hold: 30_000 })
      expect(admitted.headers.get('cache-control')).toBe('no-store')
      expect(app.stats.runs).toBe(runs)
      expect((await visitor.get('/kind')).body).toBe('pass')
      // Without the confirm request, no hold: the page goes to the site at once.
      const unconfirmed = await full({ confirm: false, passTtl: 20_000 })
      const other = new Browser(unconfirmed.app.url)
      await other.get('/')
      await unconfirmed.holder.get('/logout', { method: 'POST' })
      expect(JSON.parse((await other.get('/', { headers: poll })).body)).toEqual({ status: 'admitted' })
    })

    it('a waiter that stops polling loses its place, a head that does not come is skipped, and those behind move up', async () => {
      const { app, holder } = await full({ queue: { idleTimeout: 1500, claimWindow: 600, pollInterval: 200 } })
      const gone = new Browser(app.url) // the head, who walks away
      const stays = new Browser(app.url)
      const alsoGone = new Browser(app.url)
      const last = new Browser(app.url)
      for (const v of [gone, stays, alsoGone, last]) expect((await place(v)).status).toBe(202)
      for (const v of [gone, stays, alsoGone]) expect((await place(v)).status).toBe(202) // their first poll
      expect(await place(last)).toMatchObject({ body: { position: 4 } })
      await holder.get('/logout', { method: 'POST' })
      // Only `stays` and `last` keep polling; the head's reserved slot passes to `stays` once skipped.
      let admittedAt = 0
      await until(
        async () => {
          const l = await place(last)
          expect(l.status).toBe(202)
          const s = await place(stays)
          if (s.status === 200) admittedAt = Date.now()
          return s.status === 200
        },
        8000,
        100,
      )
      expect(admittedAt).toBeGreaterThan(0)
      await until(async () => ((await place(last)).body as { position: number }).position === 1, 8000, 100)
      // The walkers-away come back to a fresh place at the back.
      expect(await place(gone)).toMatchObject({ status: 202, body: { position: 2 } })
    })

    it('several freed slots go to as many waiters at their next poll, in order (the line drains at the rate slots free)', async () => {
      const app = await start({ limit: 3, queue: true })
      const holders = [new Browser(app.url), new Browser(app.url), new Browser(app.url)]
      for (const h of holders) expect((await h.get('/kind')).body).toBe('admit')
      const line = Array.from({ length: 5 }, () => new Browser(app.url))
      for (const v of line) expect((await place(v)).status).toBe(202)
      for (const v of line) expect((await place(v)).status).toBe(202) // the pages' first polls
      for (const h of holders) expect((await h.get('/logout', { method: 'POST' })).body).toBe('released=true')
      // One poll each, last in line first: the first three get in, the other two move up.
      const answers = []
      for (const v of [...line].reverse()) answers.unshift(await place(v))
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 202, 202])
      expect(answers.slice(3).map((a) => (a.body as { position: number }).position)).toEqual([4, 5]) // asked before the others left
      expect(await place(line[3]!)).toMatchObject({ status: 202, body: { position: 1, waiting: 2 } })
    })

    it('clients that keep no cookies stall the line only until confirmTimeout: a browser behind 200 of them gets in then', async () => {
      const { app, holder } = await full({ queue: { pollInterval: 200, confirmTimeout: 3_000 } })
      const t0 = Date.now()
      for (let i = 0; i < 20; i++) {
        const batch = await Promise.all(
          Array.from({ length: 10 }, () => hit(`${app.url}/`, { headers: JSON_ACCEPT, from: nextAddress() })),
        )
        expect(batch.map((r) => r.status)).toEqual(new Array(10).fill(202)) // each takes a new place, and never comes back
      }
      const browser = new Browser(app.url)
      expect(await place(browser)).toMatchObject({ status: 202, body: { position: 201, waiting: 201 } })
      await holder.get('/logout', { method: 'POST' })
      // The places nobody came back to lapse 3 s after they were taken (not after idleTimeout, 30 s),
      // and the freed slot with them; the browser, polling, keeps its place and gets in.
      let admitted = false
      await until(
        async () => {
          const r = await place(browser)
          admitted = r.status === 200
          if (!admitted) expect(r.status).toBe(202)
          return admitted
        },
        9_000,
        100,
      )
      expect(Date.now() - t0).toBeLessThan(9_000)
    })

    it('forged, tampered, foreign or expired tickets get a fresh place at the back, never a better one', async () => {
      const { app } = await full()
      const first = new Browser(app.url)
      const second = new Browser(app.url)
      await place(first)
      await place(second)
      const real = ticketOf(first)!
      const [v, gate, id, issued, mac] = real.split('~') as string[]
      const bad: Record<string, string> = {
        'tampered id': `${v}~${gate}~${'B'.repeat(22)}~${issued}~${mac}`,
        'other gate': forgeTicket({ gate: 'other', visitorId: id! }),
        'other secret': forgeTicket({ visitorId: id! }, 'another-secret-that-is-at-least-32-bytes'),
        'a pass, not a ticket': forgeTicket({ visitorId: id! }, SECRET, 'airlock-pass'),
        expired: forgeTicket({ visitorId: id!, issuedAt: Date.now() - 25 * 3600 * 1000 }),
        oversized: `${real}${'A'.repeat(5000)}`,
        garbage: '%%%;;;',
        empty: '',
      }
      let waiting = 2
      for (const [what, value] of Object.entries(bad)) {
        const r = await hit(`${app.url}/kind`, { headers: { ...JSON_ACCEPT, cookie: `airlock_ticket=${value}` } })
        waiting++
        expect({ what, status: r.status, body: JSON.parse(r.body) }).toMatchObject({
          what,
          status: 202,
          body: { position: waiting, waiting },
        })
        expect(r.cookies.some((c) => c.startsWith('airlock_ticket=t1~default~'))).toBe(true)
      }
      // The real ticket still holds its place.
      expect(await place(first)).toMatchObject({ status: 202, body: { position: 1 } })
    })

    it('answers RFC 9457 problem details to a client that asks for application/problem+json (202 in line, 503 busy), Retry-After on both', async () => {
      const { app } = await full({ queue: { maxLength: 1 } })
      const problem = { accept: 'application/problem+json' }
      const queued = await hit(`${app.url}/`, { headers: problem, from: nextAddress() })
      expect([queued.status, queued.headers.get('content-type'), queued.headers.get('retry-after')]).toEqual([
        202,
        'application/problem+json; charset=utf-8',
        '2',
      ])
      expect(JSON.parse(queued.body)).toMatchObject({
        type: 'tag:airlock-shield,2026:queued',
        title: 'In line',
        status: 202,
        position: 1,
        waiting: 1,
        retryAfter: 2,
      })
      const busy = await hit(`${app.url}/`, { headers: problem, from: nextAddress() })
      expect([busy.status, busy.headers.get('content-type'), busy.headers.get('retry-after')]).toEqual([
        503,
        'application/problem+json; charset=utf-8',
        '5',
      ])
      expect(JSON.parse(busy.body)).toMatchObject({ type: 'tag:airlock-shield,2026:busy', status: 503, retryAfter: 5 })
      expect(JSON.parse(busy.body).detail).toMatch(/Try again in 5 s/)
      // A plain JSON client keeps the plain JSON.
      expect(JSON.parse((await hit(`${app.url}/`, { headers: JSON_ACCEPT, from: nextAddress() })).body)).toEqual({
        status: 'busy',
        reason: 'full',
        retryAfter: 5,
      })
    })

    it('answers busy (503) once the line is at maxLength', async () => {
      const { app } = await full({ queue: { maxLength: 2 } })
      expect((await place(new Browser(app.url))).status).toBe(202)
      expect((await place(new Browser(app.url))).status).toBe(202)
      const r = await hit(`${app.url}/`, { headers: JSON_ACCEPT })
      expect(r.status).toBe(503)
      expect(r.headers.get('retry-after')).toBe('5')
      expect(JSON.parse(r.body)).toEqual({ status: 'busy', reason: 'full', retryAfter: 5 })
      expect((await hit(`${app.url}/`)).body).toContain('<noscript>')
    })

    it('in random order shows how many are waiting instead of a position', async () => {
      const { app } = await full({ queue: { order: 'random' } })
      const a = new Browser(app.url)
      const b = new Browser(app.url)
      await place(a)
      expect(await place(b)).toMatchObject({
        status: 202,
        body: { status: 'queued', position: null, eta: null, waiting: 2 },
      })
      const page = await new Browser(app.url).get('/')
      expect(page.status).toBe(202)
      expect(page.body).toContain('People waiting: <b id="w">3</b>.')
      expect(page.body).not.toContain('id="p"')
    })

    it('estimates the wait from the measured admission rate once admissions from the line are known', async () => {
      const { app, holder } = await full()
      const line = Array.from({ length: 5 }, () => new Browser(app.url))
      for (const v of line) await place(v)
      expect((await place(line[4]!)).body).toMatchObject({ eta: null })
      let current = holder
      for (const v of line.slice(0, 3)) {
        await current.get('/logout', { method: 'POST' })
        expect((await place(v)).status).toBe(200)
        current = v
        await sleep(100)
      }
      const r = (await place(line[4]!)).body as { position: number; eta: number }
      expect(r.position).toBe(2)
      expect(Number.isInteger(r.eta)).toBe(true)
      expect(r.eta).toBeGreaterThanOrEqual(1)
      expect(r.eta).toBeLessThan(60)
      const page = await line[3]!.get('/')
      expect(page.body).toMatch(/Estimated wait: <span id="e">about \d+ seconds?<\/span>/)
    })

    it('serves a custom waiting page, with the place and the nonce', async () => {
      const { app } = await full({
        nonce: () => 'n0nce',
        queue: {
          page: ({ position, waiting, eta, nonce }) => `<p nonce="${nonce}">#${position} of ${waiting}, eta ${eta}</p>`,
        },
      })
      const r = await new Browser(app.url).get('/')
      expect([r.status, r.body]).toEqual([202, '<p nonce="n0nce">#1 of 1, eta null</p>'])
      expect(r.headers.get('content-security-policy')).toBeNull()
    })

    it('refuses a queue in request mode and bad queue options at startup, naming the option', () => {
      const bad: [object, RegExp][] = [
        [{ mode: 'request', queue: true }, /queue needs mode 'session'/],
        [{ queue: { order: 'lifo' } }, /queue\.order must be one of 'fifo', 'random'/],
        [{ queue: { maxLenght: 5 } }, /queue has no option 'maxLenght'/],
        [{ queue: { pollInterval: 9000 } }, /queue\.pollInterval \(9000\) is too long/],
        [{ queue: { idleTimeout: -1 } }, /queue\.idleTimeout must be a positive number/],
        [{ queue: 'yes' }, /queue must be true or an object/],
        [{ queue: { page: '<p>' } }, /queue\.page must be a function/],
        [{ queue: { confirmTimeout: 1000 } }, /queue\.confirmTimeout must be above 1\.25x pollInterval \(2000\)/],
        [
          { queue: { confirmTimeout: 40_000 } },
          /queue\.confirmTimeout must be at most queue\.idleTimeout \(30000\), got 40000/,
        ],
      ]
      for (const [options, message] of bad) {
        let error: unknown
        try {
          createGate({ store: memoryStore(), secret: SECRET, logger: recordingLogger(), ...options })
        } catch (err) {
          error = err
        }
        expect(isAirlockError(error) && error.code).toBe('ERR_AIRLOCK_OPTION')
        expect((error as Error).message).toMatch(message)
      }
    })
  })
}

/** One line shared by two instances on one Redis. */
export function redisWaitingRoomBehaviour(adapter: AdapterName): void {
  requireRedis()
  let redis: PrivateRedis
  const apps: TestApp[] = []
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()))
  })

  describe(`${adapter}: waiting room on Redis`, () => {
    it('two instances share one line: a ticket from one keeps its place on the other, and is admitted there', async () => {
      const gate = { limit: 1, secret: SECRET, queue: true, logger: recordingLogger() }
      const a = await startApp(adapter, {
        gate: { ...gate, store: redisStore({ client: redis.client(), prefix: `w${adapter}` }) },
      })
      apps.push(a)
      const b = await startApp(adapter, {
        gate: { ...gate, store: redisStore({ client: redis.client(), prefix: `w${adapter}` }) },
      })
      apps.push(b)
      const holder = new Browser(a.url)
      expect((await holder.get('/kind')).body).toBe('admit')
      const first = new Browser(a.url)
      expect(await place(first)).toMatchObject({ status: 202, body: { position: 1 } })
      const second = new Browser(b.url)
      expect(await place(second)).toMatchObject({ status: 202, body: { position: 2 } })
      const onB = new Browser(b.url)
      for (const [k, v] of first.jar) onB.jar.set(k, v)
      expect(await place(onB)).toMatchObject({ status: 202, body: { position: 1, waiting: 2 } })
      await holder.get('/logout', { method: 'POST' })
      expect((await place(second)).status).toBe(202)
      expect(await place(onB)).toMatchObject({ status: 200, body: 'admit' })
      const pass = onB.jar.get('airlock_pass')!
      expect((await hit(`${a.url}/kind`, { headers: { cookie: `airlock_pass=${pass}` } })).body).toBe('pass')
    })
  })
}
