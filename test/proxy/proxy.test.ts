/**
 * `createProxy` in front of origins no one here wrote (Python's http.server, PHP's built-in server)
 * and a Node origin for WebSockets; `airlock proxy` as a real process for 50 MB bodies.
 */
import { readFileSync } from 'node:fs'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { AirlockProxy } from '../../src/proxy.js'
import WebSocket from 'ws'
import { createProxy, type ProxyOptions } from '../../src/proxy.js'
import { isAirlockError } from '../../src/base/errors.js'
import { memoryStore } from '../../src/stores/memory.js'
import { airlock } from '../cli/harness.js'
import { hit, Browser } from '../http/harness.js'
import { sleep } from '../helpers/wait.js'
import { nodeOrigin, phpOrigin, pythonOrigin, type Origin } from './origins.js'

const SECRET = 'a-proxy-test-secret-at-least-32-bytes'
const apps: AirlockProxy[] = []
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close()
})
async function proxy(options: ProxyOptions): Promise<string> {
  const app = await createProxy({ secret: SECRET, store: memoryStore(), logger: { warn: () => {} }, ...options })
  await app.listen({ port: 0, host: '127.0.0.1' })
  apps.push(app)
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
}

describe('airlock proxy in front of PHP and Python', () => {
  let php: Origin
  let python: Origin
  beforeAll(async () => {
    ;[php, python] = await Promise.all([phpOrigin(), pythonOrigin()])
  }, 30_000)
  afterAll(async () => {
    await Promise.all([php?.stop(), python?.stop()])
  })

  it("forwards method, path, query, body and status unchanged; the origin's cookie reaches the client beside the pass", async () => {
    const base = await proxy({ target: php.url, limit: 5 })
    const res = await fetch(`${base}/shop/item?id=7&q=a%20b`, {
      method: 'POST',
      body: 'hello=world',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(res.status).toBe(200)
    const text = await res.text()
    expect(text).toContain('Hello from PHP')
    const echo = JSON.parse(text.slice(text.indexOf('{'))) as Record<string, string>
    expect(echo).toMatchObject({ method: 'POST', uri: '/shop/item?id=7&q=a%20b', body: 'hello=world', proto: 'http' })
    expect(res.headers.get('x-origin')).toBe('php')
    const cookies = res.headers.getSetCookie().map((c) => c.split('=')[0])
    expect(cookies).toEqual(expect.arrayContaining(['airlock_pass', 'origin_session']))
    expect((await fetch(`${base}/teapot`)).status).toBe(418)
  })

  it('sets X-Forwarded-*: replaces what the client claims, unless trustProxy', async () => {
    const read = async (base: string) => {
      const t = await (await fetch(`${base}/`, { headers: { 'x-forwarded-for': '6.6.6.6' } })).text()
      return JSON.parse(t.slice(t.indexOf('{'))) as { xff: string; xhost: string }
    }
    const plain = await read(await proxy({ target: php.url }))
    expect(plain.xff).toBe('127.0.0.1')
    expect(plain.xhost).toMatch(/^127\.0\.0\.1:\d+$/)
    const trusting = await read(await proxy({ target: php.url, trustProxy: true }))
    expect(trusting.xff).toBe('6.6.6.6, 127.0.0.1')
  })

  it("serves Python's files, HEAD and 404s through the gate; the busy answer once the limit is reached", async () => {
    const base = await proxy({ target: python.url, limit: 1 })
    const visitor = new Browser(base)
    const page = await visitor.get('/')
    expect(page.status).toBe(200)
    expect(page.body).toContain('Hello from Python')
    expect((await visitor.get('/data.txt')).body).toHaveLength(100_000)
    expect((await visitor.get('/missing.html')).status).toBe(404)
    expect((await visitor.get('/data.txt', { method: 'HEAD' })).status).toBe(200)
    const other = await hit(`${base}/`, { headers: { accept: 'application/json' } })
    expect(other.status).toBe(503)
    expect(other.headers.get('airlock')).toMatch(/^busy; reason=(full|client-share); gate=/)
  })

  it('answers a small 502 page (JSON for API clients) when the origin is down', async () => {
    const base = await proxy({ target: 'http://127.0.0.1:1' })
    const html = await hit(`${base}/`)
    expect(html.status).toBe(502)
    expect(html.body).toContain('The site is not answering')
    // The proxy answered for the origin: an origin error, told apart from the shield's own refusals.
    expect(html.headers.get('airlock')).toBe('origin-error; reason=refused')
    const json = await hit(`${base}/`, { headers: { accept: 'application/json' } })
    expect(JSON.parse(json.body)).toMatchObject({ status: 'bad-gateway' })
    expect(json.headers.get('airlock')).toBe('origin-error; reason=refused')
  })

  it("answers the 502 page in the visitor's language (lang, dir, Content-Language, Vary); the messages option applies, gated or not", async () => {
    const base = await proxy({ target: 'http://127.0.0.1:1' })
    const german = await hit(`${base}/`, { headers: { 'accept-language': 'de-CH, en;q=0.5' } })
    expect(german.status).toBe(502)
    expect(german.body).toMatch(/^<!doctype html><html lang="de" dir="ltr">/)
    expect(german.body).toContain('<h1>Die Website antwortet nicht</h1>')
    expect(german.headers.get('content-language')).toBe('de')
    expect(german.headers.get('vary')).toBe('Accept, Accept-Language')
    const hebrew = await hit(`${base}/`, { headers: { 'accept-language': 'he' } })
    expect(hebrew.body).toMatch(/^<!doctype html><html lang="he" dir="rtl">/)
    const unknown = await hit(`${base}/`, { headers: { 'accept-language': 'xx' } })
    expect(unknown.body).toContain('The site is not answering')
    expect(unknown.headers.get('content-language')).toBe('en')
    const json = await hit(`${base}/`, { headers: { accept: 'application/json', 'accept-language': 'de' } })
    expect(JSON.parse(json.body)).toMatchObject({ status: 'bad-gateway', message: 'Its server did not respond.' })
    const ungated = await proxy({
      target: 'http://127.0.0.1:1',
      gated: false,
      messages: { de: { badGatewayHeading: 'Der Shop ist gleich wieder da' } },
    })
    expect((await hit(`${ungated}/`, { headers: { 'accept-language': 'de' } })).body).toContain(
      '<h1>Der Shop ist gleich wieder da</h1>',
    )
    await expect(
      createProxy({ target: php.url, gated: false, messages: { de: { badGateway: 'x' } } as never }),
    ).rejects.toThrow(/messages\.de has no option 'badGateway'/)
  })

  it('refuses bad options with a named error', async () => {
    for (const [options, message] of [
      [{ target: 'ftp://x' }, 'target must be an http:// or https:// URL'],
      [{ target: php.url, limit: 0 }, 'limit must be a positive integer'],
      [{ target: php.url, targett: 1 }, 'targett'],
    ] as const) {
      try {
        await createProxy(options as unknown as ProxyOptions)
        expect.unreachable()
      } catch (err) {
        expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION')).toBe(true)
        expect((err as Error).message).toContain(message)
      }
    }
  })
})

describe('airlock proxy with a Node origin', () => {
  let origin: Awaited<ReturnType<typeof nodeOrigin>>
  beforeAll(async () => {
    origin = await nodeOrigin()
  })
  afterAll(async () => origin?.stop())

  it('passes a WebSocket echo for an admitted visitor; without a pass, when full, no upgrade', async () => {
    const base = await proxy({ target: origin.url, limit: 1 })
    const visitor = new Browser(base)
    expect((await visitor.get('/download?mb=1')).status).toBe(200)
    const ws = new WebSocket(`${base.replace('http', 'ws')}/ws`, { headers: { cookie: visitor.cookieHeader() } })
    const echoed = await new Promise<string>((resolve, reject) => {
      ws.on('open', () => ws.send('ping through the airlock'))
      ws.on('message', (d) => resolve(String(d)))
      ws.on('error', reject)
    })
    expect(echoed).toBe('ping through the airlock')
    ws.close()
    const stranger = new WebSocket(`${base.replace('http', 'ws')}/ws`)
    const refused = await new Promise<number>((resolve) => {
      stranger.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0))
      stranger.on('open', () => resolve(101))
      stranger.on('error', () => resolve(-1))
    })
    expect(refused).toBe(503)
  })

  it('streams a 50 MB upload and a 50 MB download through `airlock proxy`, its memory under 100 MB above rest', {
    timeout: 60_000,
  }, async () => {
    const run = airlock(['proxy', '--target', origin.url, '--port', '0', '--limit', '5'])
    const line = await run.waitFor(/airlock proxy on (http:\/\/[^ ]+\/)/)
    const base = /on (http:\/\/[^ ]+)\//.exec(line)![1]!
    const rss = (): number =>
      Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${run.proc.pid}/status`, 'utf8'))![1]) * 1024
    const visitor = new Browser(base)
    expect((await visitor.get('/download?mb=1')).status).toBe(200)
    await sleep(300)
    const atRest = rss()
    let peak = atRest
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 20)
    try {
      const body = Buffer.alloc(50 * 1024 * 1024, 1)
      const up = await fetch(`${base}/upload`, { method: 'PUT', body, headers: { cookie: visitor.cookieHeader() } })
      expect(await up.text()).toBe(String(50 * 1024 * 1024))
      expect(origin.uploaded()).toBe(50 * 1024 * 1024)
      const down = await fetch(`${base}/download?mb=50`, { headers: { cookie: visitor.cookieHeader() } })
      let n = 0
      for await (const chunk of down.body!) n += (chunk as Uint8Array).length
      expect(n).toBe(50 * 1024 * 1024)
    } finally {
      clearInterval(sampler)
    }
    expect(peak - atRest).toBeLessThan(100 * 1024 * 1024)
    run.proc.kill('SIGTERM')
    expect((await run.exited).code).toBe(0)
  })
})
