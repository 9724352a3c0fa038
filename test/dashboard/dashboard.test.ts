import { createServer, type Server } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import express from 'express'
import { createDashboard, type Dashboard } from '../../src/dashboard/server.js'
import { airlockDashboard as fastifyDashboard, airlockShield } from '../../src/fastify.js'
import { airlockDashboard as expressDashboard, airlock } from '../../src/express.js'
import { createGate } from '../../src/gate/gate.js'
import { isAirlockError } from '../../src/base/errors.js'
import { memoryStore, type MemoryStore } from '../../src/stores/memory.js'
import type { Store } from '../../src/stores/types.js'
import { sleep, until } from '../helpers/wait.js'
import { hit, nextAddress } from '../http/harness.js'
import { cutOff, raw, statusOf } from '../helpers/hostile.js'

const TOKEN = 'a-dashboard-token-for-tests'
const SECRET = 'a-test-secret-that-is-at-least-32-bytes-long'
const closers: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

/** A memory store that counts its `status` calls (what the sampler makes). */
function countStatus(inner: MemoryStore): { store: Store; calls: () => number } {
  let n = 0
  const store = new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown
      if (prop === 'status') {
        return (...a: [string]) => {
          n++
          return target.status(...a)
        }
      }
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
    },
  })
  return { store, calls: () => n }
}

/** Reads server-sent events from `url` until `count` events arrived. */
async function readEvents(
  url: string,
  headers: Record<string, string>,
  count: number,
): Promise<{ event: string; data: unknown }[]> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) })
  expect(res.headers.get('content-type')).toBe('text/event-stream')
  const reader = res.body!.getReader()
  const events: { event: string; data: unknown }[] = []
  let text = ''
  while (events.length < count) {
    const { value, done } = await reader.read()
    if (done) break
    text += new TextDecoder().decode(value)
    let i: number
    while ((i = text.indexOf('\n\n')) >= 0) {
      const block = text.slice(0, i)
      text = text.slice(i + 2)
      const event = /^event: (.*)$/m.exec(block)?.[1]
      const data = /^data: (.*)$/m.exec(block)?.[1]
      if (event && data) events.push({ event, data: JSON.parse(data) })
    }
  }
  await reader.cancel()
  return events
}

type Mounted = { base: string; store: MemoryStore }

const MOUNTS: Record<string, () => Promise<Mounted>> = {
  async fastify() {
    const store = memoryStore()
    const app = Fastify()
    await app.register(airlockShield, { name: 'shop', limit: 1, store, secret: SECRET })
    await app.register(fastifyDashboard, { prefix: '/airlock', token: TOKEN, store, names: ['shop'], interval: 200 })
    app.get('/', async () => 'site')
    await app.listen({ port: 0, host: '127.0.0.1' })
    closers.push(() => app.close())
    return { base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}/airlock`, store }
  },
  async express() {
    const store = memoryStore()
    const app = express()
    const dash = expressDashboard({ token: TOKEN, store, names: ['shop'], interval: 200 })
    app.use('/airlock', dash)
    const gate = airlock({ name: 'shop', limit: 1, store, secret: SECRET })
    app.use(gate)
    app.get('/', (_req, res) => void res.send('site'))
    const server: Server = await new Promise((ok) => {
      const s = app.listen(0, '127.0.0.1', () => ok(s))
    })
    closers.push(
      () => new Promise((ok) => server.close(ok)),
      () => dash.close(),
      () => gate.close(),
    )
    return { base: `http://127.0.0.1:${(server.address() as { port: number }).port}/airlock`, store }
  },
}

describe.each(Object.keys(MOUNTS))('the dashboard mounted in %s', (name) => {
  it('401 without the token or with a wrong one (the same answer), 200 with it; ?token= becomes an HttpOnly cookie', async () => {
    const { base } = await MOUNTS[name]!()
    const none = await fetch(`${base}/`)
    const wrong = await fetch(`${base}/`, { headers: { authorization: 'Bearer not-the-token-at-all' } })
    // A wrong token slows its client down: the next try within 250 ms is 429, whatever it sends.
    const tooSoon = await fetch(`${base}/`, { headers: { authorization: `Bearer ${TOKEN}` } })
    expect([tooSoon.status, tooSoon.headers.get('retry-after'), tooSoon.headers.get('airlock')]).toEqual([
      429,
      '1',
      'refused; reason=sign-in-attempts',
    ])
    await sleep(300)
    const short = await fetch(`${base}/state?token=x`)
    for (const r of [none, wrong, short]) {
      expect(r.status).toBe(401)
      expect(await r.text()).toBe('unauthorized\n')
    }
    await sleep(600) // the second failure in a row: 500 ms
    const page = await fetch(`${base}/`, { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain('airlock-shield')
    expect(html).not.toContain(TOKEN)
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'")
    const login = await fetch(`${base}/?token=${TOKEN}`, { redirect: 'manual' })
    expect(login.status).toBe(303)
    expect(login.headers.get('location')).toBe('/airlock/')
    const cookie = login.headers.get('set-cookie')!
    expect(cookie).toMatch(/HttpOnly; SameSite=Strict/)
    expect(cookie).not.toContain(TOKEN)
    const withCookie = await fetch(`${base}/state`, { headers: { cookie: cookie.split(';')[0]! } })
    expect(withCookie.status).toBe(200)
  })

  it('signs in without the token in any URL: a browser gets a form, its POST sets the cookie; guessing is slowed down per client', async () => {
    const { base } = await MOUNTS[name]!()
    const form = await fetch(`${base}/`, { headers: { accept: 'text/html' } })
    expect(form.status).toBe(401)
    expect(await form.text()).toContain('<form method="post">')
    expect(form.headers.get('content-security-policy')).toContain("form-action 'self'")
    const post = (token: string) =>
      fetch(`${base}/`, {
        method: 'POST',
        redirect: 'manual',
        headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }).toString(),
      })
    const bad = await post('guess-0000000000000000')
    expect([bad.status, (await bad.text()).includes('That token is not right.')]).toEqual([401, true])
    // Guessing: every try while the client must wait is 429, the real token too; the waits double.
    let tries = 0
    const t0 = Date.now()
    while (Date.now() - t0 < 1_000) {
      tries++
      await post(`guess-${tries}`)
    }
    expect(tries).toBeGreaterThan(3)
    const blocked = await post(TOKEN)
    expect(blocked.status).toBe(429)
    await sleep(Number(blocked.headers.get('retry-after')) * 1000 + 100)
    const ok = await post(TOKEN)
    expect(ok.status).toBe(303)
    expect(ok.headers.get('set-cookie')).toMatch(/^airlock_dashboard=[0-9a-f]{64}; .*HttpOnly; SameSite=Strict/)
  })

  it('streams samples (held, limit, instances) and applies controls posted from the page; the gate follows', async () => {
    const { base } = await MOUNTS[name]!()
    const auth = { authorization: `Bearer ${TOKEN}` }
    expect((await hit(`${base.replace('/airlock', '')}/`, { from: nextAddress() })).status).toBe(200) // one visitor inside
    await sleep(1_200) // the gate reports once a second
    const events = await readEvents(`${base}/events`, auth, 2)
    expect(events[0]!.event).toBe('init')
    const sample = events.at(-1)!.data as {
      views: { name: string; sample: { held: number; limit: number; instances: number } }[]
    }
    expect(sample.views[0]).toMatchObject({ name: 'shop', sample: { held: 1, limit: 1, instances: 1 } })
    const post = (body: unknown, headers: Record<string, string> = { 'x-airlock-dashboard': '1' }) =>
      fetch(`${base}/control`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      })
    expect((await post({ name: 'shop', patch: { limit: 3 } }, {})).status).toBe(400) // no custom header: not from the page
    const bad = await post({ name: 'shop', patch: { limit: 0 } })
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { error: string }).error).toContain('limit must be a whole number')
    const ok = await post({ name: 'shop', patch: { limit: 3 } })
    expect(ok.status).toBe(200)
    expect(await ok.json()).toMatchObject({ limit: 3, updatedBy: 'dashboard', version: 1 })
    await until(
      async () => (await hit(`${base.replace('/airlock', '')}/`, { from: nextAddress() })).status === 200,
      3_000,
    )
  })
})

describe.each(Object.keys(MOUNTS))('the dashboard in %s against hostile clients (issue 38)', (name) => {
  it('a sign-in POST or a control POST cut off mid-body is dropped; the process goes on and answers', async () => {
    const { base } = await MOUNTS[name]!()
    const unhandled: unknown[] = []
    const record = (reason: unknown): void => void unhandled.push(reason)
    process.on('unhandledRejection', record)
    try {
      const form = { 'Content-Type': 'application/x-www-form-urlencoded' }
      const control = {
        'Content-Type': 'application/json',
        'X-Airlock-Dashboard': '1',
        Authorization: `Bearer ${TOKEN}`,
      }
      const path = new URL(base).pathname
      for (let i = 0; i < 20; i++) {
        await cutOff(base, 'POST', `${path}/`, form, 100, 'token=abc'.slice(0, i % 10))
        await cutOff(base, 'POST', `${path}/control`, control, 100, '{"name":"shop","patch":'.slice(0, i))
      }
      await sleep(100)
      expect(unhandled).toEqual([])
      expect((await fetch(`${base}/state`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200)
    } finally {
      process.off('unhandledRejection', record)
    }
  })

  it('bodies too large, too slow, compressed or not UTF-8 are answered with why, and the connection closes', async () => {
    const { base } = await MOUNTS[name]!()
    const path = new URL(base).pathname
    const control = `POST ${path}/control HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Airlock-Dashboard: 1\r\nAuthorization: Bearer ${TOKEN}`
    expect(statusOf(await raw(base, `${control}\r\nContent-Length: 99999`, '', { close: 'when-answered' }))).toBe(413)
    expect(
      statusOf(
        await raw(
          base,
          `${control}\r\nTransfer-Encoding: chunked`,
          `1000\r\n${'x'.repeat(4096)}\r\n1000\r\n${'x'.repeat(4096)}\r\n`,
          { close: 'when-answered' },
        ),
      ),
    ).toBe(413)
    expect(
      statusOf(
        await raw(base, `${control}\r\nContent-Encoding: gzip\r\nContent-Length: 4`, 'abcd', {
          close: 'when-answered',
        }),
      ),
    ).toBe(415)
    expect(
      statusOf(
        await raw(base, `${control}\r\nContent-Length: 4`, Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), {
          close: 'when-answered',
        }),
      ),
    ).toBe(400)
  })

  it('an operator signed in is never 429 while someone guesses tokens from the same address', async () => {
    const { base } = await MOUNTS[name]!()
    const login = await fetch(`${base}/?token=${TOKEN}`, { redirect: 'manual' })
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!
    const statuses = new Set<number>()
    let guesses = 0
    const stop = Date.now() + 1_500
    const guesser = (async () => {
      while (Date.now() < stop) {
        guesses++
        await fetch(`${base}/state`, { headers: { authorization: `Bearer guess-${guesses}-xxxxxxxxxxxx` } })
      }
    })()
    while (Date.now() < stop) {
      const r = await fetch(`${base}/state`, { headers: { cookie } })
      statuses.add(r.status)
      const c = await fetch(`${base}/control`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json', 'x-airlock-dashboard': '1' },
        body: JSON.stringify({ name: 'shop', patch: { limit: 2 } }),
      })
      statuses.add(c.status)
    }
    await guesser
    expect(guesses).toBeGreaterThan(5)
    expect([...statuses]).toEqual([200])
    // The guesser is slowed down: the real token by header is refused while it must wait.
    expect((await fetch(`${base}/state`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(429)
  })
})

describe('the dashboard behind a proxy: wrong tokens slow down the visitor who sent them, not everyone (issue 38)', () => {
  it('with trustProxy, each visitor behind the proxy is counted as itself (an IPv6 /64 as one)', async () => {
    const dashboard = createDashboard({ token: TOKEN, store: memoryStore(), interval: 200, trustProxy: ['127.0.0.1'] })
    const server = createServer((req, res) => dashboard.handle(req, res))
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
    closers.push(
      () => new Promise((ok) => server.close(ok)),
      () => dashboard.close(),
    )
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`
    const as = (xff: string, token: string) =>
      fetch(`${base}/state`, { headers: { 'x-forwarded-for': xff, authorization: `Bearer ${token}` } })
    expect((await as('198.51.100.7', 'wrong-token-wrong-token')).status).toBe(401)
    expect((await as('198.51.100.7', TOKEN)).status).toBe(429)
    expect((await as('2001:db8:1:2::9', 'wrong-token-wrong-token')).status).toBe(401)
    expect((await as('2001:db8:1:2::77', TOKEN)).status, 'the same /64').toBe(429)
    // Another visitor behind the same proxy, and a spoofed chain ending at the real visitor.
    expect((await as('203.0.113.9', TOKEN)).status).toBe(200)
    expect(
      (await as('203.0.113.9, 198.51.100.7', TOKEN)).status,
      'read from the right: the client is 198.51.100.7',
    ).toBe(429)
  })
})

describe("a ?token= link is left out of the host's logs (issue 25)", () => {
  it('Fastify\'s own request log ("incoming request") shows the link without its token', async () => {
    const lines: string[] = []
    const app = Fastify({ logger: { level: 'info', stream: { write: (l: string) => void lines.push(l) } } })
    await app.register(fastifyDashboard, {
      prefix: '/airlock',
      token: TOKEN,
      store: memoryStore(),
      names: ['shop'],
      interval: 200,
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    closers.push(() => app.close())
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/airlock`
    const login = await fetch(`${base}/?token=${TOKEN}&x=1`, { redirect: 'manual' })
    expect(login.status).toBe(303)
    const logged = lines.join('')
    expect(logged).toContain('/airlock/?token=[redacted]&x=1')
    expect(logged).not.toContain(TOKEN)
  })

  it('Express: a request logger that writes when the answer is sent (as morgan does) sees originalUrl without the token; so does a plain server', async () => {
    const seen: string[] = []
    const app = express()
    app.use((req, res, next) => {
      res.on('finish', () => seen.push(`express ${req.originalUrl}`))
      next()
    })
    const dash = expressDashboard({ token: TOKEN, store: memoryStore(), names: ['shop'], interval: 200 })
    app.use('/airlock', dash)
    const dashboard = createDashboard({ token: TOKEN, store: memoryStore(), names: ['shop'], interval: 200 })
    const plain = createServer((req, res) => {
      res.on('finish', () => seen.push(`plain ${req.url}`))
      dashboard.handle(req, res)
    })
    const servers = [app.listen(0, '127.0.0.1'), plain.listen(0, '127.0.0.1')]
    closers.push(
      ...servers.map((s) => () => new Promise((ok) => s.close(ok))),
      () => dash.close(),
      () => dashboard.close(),
    )
    await Promise.all(servers.map((s) => new Promise((ok) => (s.listening ? ok(null) : s.once('listening', ok)))))
    const [e, p] = servers.map((s) => `http://127.0.0.1:${(s.address() as { port: number }).port}`)
    expect((await fetch(`${e}/airlock/?token=${TOKEN}`, { redirect: 'manual' })).status).toBe(303)
    expect((await fetch(`${p}/?a=b&token=${TOKEN}`, { redirect: 'manual' })).status).toBe(303)
    await until(async () => seen.length === 2, 2_000)
    expect(seen.sort()).toEqual(['express /airlock/?token=[redacted]', 'plain /?a=b&token=[redacted]'])
  })

  it('a token parameter spelt with escapes (tok%65n=) signs in as token= does, and is redacted as well (issue 38)', async () => {
    const seen: string[] = []
    const dashboard = createDashboard({ token: TOKEN, store: memoryStore(), names: ['shop'], interval: 200 })
    const plain = createServer((req, res) => {
      res.on('finish', () => seen.push(req.url!))
      dashboard.handle(req, res)
    })
    await new Promise<void>((ok) => plain.listen(0, '127.0.0.1', ok))
    closers.push(
      () => new Promise((ok) => plain.close(ok)),
      () => dashboard.close(),
    )
    const base = `http://127.0.0.1:${(plain.address() as { port: number }).port}`
    for (const name of ['tok%65n', '%74oken', '%74%6F%6B%65%6E']) {
      expect((await fetch(`${base}/?${name}=${TOKEN}`, { redirect: 'manual' })).status, name).toBe(303)
    }
    await until(async () => seen.length === 3, 2_000)
    expect(seen).toEqual(['/?tok%65n=[redacted]', '/?%74oken=[redacted]', '/?%74%6F%6B%65%6E=[redacted]'])
  })
})

describe('the dashboard core', () => {
  it('refuses a missing or short token with a named error', () => {
    for (const token of [undefined, 'short']) {
      try {
        createDashboard({ token: token as string })
        expect.unreachable()
      } catch (err) {
        expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION')).toBe(true)
        expect((err as Error).message).toContain('token must be a string of at least 16 characters')
      }
    }
  })

  it('costs one store call per gate per interval, however many pages are open', async () => {
    const { store, calls } = countStatus(memoryStore())
    const dash: Dashboard = createDashboard({ token: TOKEN, store, names: ['a', 'b'], interval: 250 })
    closers.push(() => dash.close())
    const server = createServer((req, res) => dash.handle(req, res))
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
    closers.push(() => new Promise((ok) => server.close(ok)))
    await dash.ready
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/events`
    const before = calls()
    await Promise.all(Array.from({ length: 8 }, () => readEvents(url, { authorization: `Bearer ${TOKEN}` }, 5)))
    const during = calls() - before
    // 8 pages read 4 samples each (~1 s): still 2 names x ~4-5 ticks, not 8x that.
    expect(during).toBeGreaterThanOrEqual(6)
    expect(during).toBeLessThanOrEqual(12)
  })

  it('shows every instance of a gate with its counters', async () => {
    const store = memoryStore()
    const a = createGate({ name: 'shop', store, secret: SECRET, statusInterval: 100 })
    const b = createGate({ name: 'shop', store, secret: SECRET, statusInterval: 100 })
    closers.push(
      () => a.close(),
      () => b.close(),
    )
    const dash = createDashboard({ token: TOKEN, store, names: ['shop'], interval: 100 })
    closers.push(() => dash.close())
    await a.decide({ method: 'GET', url: '/', headers: {}, secure: false, request: undefined })
    await until(() => dash.sampler.views()[0]!.instances.length === 2, 3_000)
    const view = dash.sampler.views()[0]!
    expect(view.instances.map((i) => i.counters.admitted).sort()).toEqual([0, 1])
    expect(view.sample).toMatchObject({ held: 1, limit: 100, instances: 2 })
  })
})
