/**
 * `airlock proxy` as dull as nginx: uploads with `Expect: 100-continue` and chunked bodies into
 * PHP's built-in server (curl and undici as clients, MD5 checked), hop-by-hop and forwarding
 * headers, WebSockets holding their slot in request mode, a hanging origin, the origin's
 * `Airlock-Command: release`, and the access log.
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { request as undiciRequest } from 'undici'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { createProxy, type AirlockProxy, type ProxyOptions } from '../../src/proxy.js'
import { memoryStore } from '../../src/stores/memory.js'
import { closeAll, sleep, until } from '../helpers/wait.js'
import { raw, statusOf } from '../helpers/hostile.js'
import { nodeOrigin, phpOrigin, type Origin } from './origins.js'
import { hit, nextAddress } from '../http/harness.js'

const SECRET = 'a-proxy-test-secret-at-least-32-bytes'
const proxies: AirlockProxy[] = []
afterEach(async () => {
  for (const p of proxies.splice(0)) await p.close()
})
async function proxy(options: ProxyOptions): Promise<{ base: string; proxy: AirlockProxy }> {
  const p = await createProxy({ secret: SECRET, store: memoryStore(), logger: { warn: () => {} }, ...options })
  proxies.push(p)
  return { base: await p.listen({ port: 0 }), proxy: p }
}

/** Runs curl; resolves its stdout (the body, then the status code on the last line) and stderr. */
/** curl as one visitor: from a loopback address of its own (the client share counts by address). */
function curl(args: string[], from = nextAddress()): Promise<{ out: string; err: string; code: number | null }> {
  const proc = spawn('curl', ['-sS', '--interface', from, '-w', '\n%{http_code}', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()))
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()))
  return new Promise((resolve) => proc.on('close', (code) => resolve({ out, err, code })))
}
const md5 = (b: Buffer): string => createHash('md5').update(b).digest('hex')
const status = (out: string): number => Number(out.slice(out.lastIndexOf('\n') + 1))
const body = (out: string): string => out.slice(0, out.lastIndexOf('\n'))

describe('uploads reach PHP intact (curl and undici as clients)', () => {
  let php: Origin
  let dir: string
  beforeAll(async () => {
    php = await phpOrigin()
    dir = mkdtempSync(join(tmpdir(), 'airlock-upload-'))
  }, 30_000)
  afterAll(async () => php?.stop())

  it("curl's own Expect: 100-continue (1 MiB + 1 byte, 50 MB), a chunked body, a 5-byte Expect POST: 200 and the same MD5 at the origin", {
    timeout: 60_000,
  }, async () => {
    const { base } = await proxy({ target: php.url, limit: 5 })
    for (const size of [1024 * 1024 + 1, 50 * 1024 * 1024]) {
      const data = Buffer.alloc(size, 0)
      for (let i = 0; i < size; i += 4096) data[i] = i % 251
      const file = join(dir, `up-${size}`)
      writeFileSync(file, data)
      // curl adds Expect: 100-continue by itself to bodies over 1 MiB (before: 502 in 2 ms).
      const r = await curl([
        '-v',
        '--data-binary',
        `@${file}`,
        '-H',
        'content-type: application/octet-stream',
        `${base}/upload`,
      ])
      expect(r.err).toMatch(/Expect: 100-continue/i)
      expect(status(r.out)).toBe(200)
      expect(JSON.parse(body(r.out))).toEqual({ length: size, md5: md5(data) })
    }
    const chunked = Buffer.from(`${'x'.repeat(300_000)}end`)
    const file = join(dir, 'chunked')
    writeFileSync(file, chunked)
    const c = await curl([
      '-H',
      'transfer-encoding: chunked',
      '-H',
      'content-type: application/octet-stream',
      '--data-binary',
      `@${file}`,
      `${base}/upload`,
    ])
    expect(status(c.out)).toBe(200)
    expect(JSON.parse(body(c.out))).toEqual({ length: chunked.length, md5: md5(chunked) })
    const small = await curl([
      '-H',
      'expect: 100-continue',
      '-H',
      'content-type: application/octet-stream',
      '--data-binary',
      'hello',
      `${base}/upload`,
    ])
    expect(status(small.out)).toBe(200)
    expect(JSON.parse(body(small.out))).toEqual({ length: 5, md5: md5(Buffer.from('hello')) })
  })

  it('undici as the client: a fixed-length body and a streamed one without a length', async () => {
    const { base } = await proxy({ target: php.url, limit: 5 })
    const data = Buffer.from('y'.repeat(2 * 1024 * 1024))
    const fixed = await undiciRequest(`${base}/upload`, {
      method: 'POST',
      body: data,
      headers: { 'content-type': 'application/octet-stream' },
    })
    expect(fixed.statusCode).toBe(200)
    expect(await fixed.body.json()).toEqual({ length: data.length, md5: md5(data) })
    const streamed = await undiciRequest(`${base}/upload`, {
      method: 'POST',
      body: Readable.from([data.subarray(0, 1000), data.subarray(1000)]),
      headers: { 'content-type': 'application/octet-stream' },
    })
    expect(streamed.statusCode).toBe(200)
    expect(await streamed.body.json()).toEqual({ length: data.length, md5: md5(data) })
  })

  it('a busy answer to an Expect: 100-continue upload is sent before any of the body (no 100 Continue)', async () => {
    const { base } = await proxy({ target: php.url, limit: 1, mode: 'request' })
    // Someone inside: a slow upload holds the one slot.
    const slow = new Readable({ read() {} })
    slow.push('a')
    const holding = undiciRequest(`${base}/upload`, {
      method: 'POST',
      body: slow,
      headers: { 'content-type': 'application/octet-stream' },
    })
    await sleep(200)
    const r = await curl([
      '-v',
      '-H',
      'expect: 100-continue',
      '-H',
      'accept: application/json',
      '--data-binary',
      'hello',
      `${base}/upload`,
    ])
    expect(status(r.out)).toBe(503)
    expect(r.err).not.toMatch(/HTTP\/1\.1 100/)
    slow.push(null)
    expect((await holding).statusCode).toBe(200)
  })
})

describe('headers, both ways', () => {
  let php: Origin
  beforeAll(async () => {
    php = await phpOrigin()
  }, 30_000)
  afterAll(async () => php?.stop())

  it("the origin never sees a client's X-Real-IP or Forwarded, hop-by-hop headers, nor the pass cookie; the client keeps its keep-alive", async () => {
    const { base } = await proxy({ target: php.url, limit: 5 })
    const first = await fetch(`${base}/`)
    const pass = first.headers
      .getSetCookie()
      .find((c) => c.startsWith('airlock_pass='))!
      .split(';')[0]!
    // Two requests on one curl connection: the first to /headers (PHP answers it with Connection: close).
    const h = (name: string, value: string): string[] => ['-H', `${name}: ${value}`]
    const from = nextAddress()
    const run = await curl(
      [
        '-v',
        ...h('cookie', `${pass}; theme=dark`),
        ...h('x-real-ip', '6.6.6.6'),
        ...h('forwarded', 'for=6.6.6.6'),
        ...h('x-secret-hop', 'drop me'),
        ...h('connection', 'keep-alive, x-secret-hop'),
        ...h('te', 'trailers'),
        ...h('proxy-authorization', 'Basic eA=='),
        `${base}/headers`,
        `${base}/teapot`,
      ],
      from,
    )
    const json = run.out.slice(run.out.indexOf('{'), run.out.indexOf('\n'))
    const res = {
      headers: JSON.parse(json) as Record<string, string>,
      connection: /< connection: (\S+)/i.exec(run.err)?.[1],
      reused: /Re-using existing connection/i.test(run.err),
    }
    expect(res.headers['x-real-ip']).toBe(from)
    expect(res.headers.forwarded).toMatch(
      new RegExp(`^for=${from.replaceAll('.', '\\.')};host="127\\.0\\.0\\.1:\\d+";proto=http$`),
    )
    expect(res.headers.cookie).toBe('theme=dark')
    for (const h of ['x-secret-hop', 'te', 'proxy-authorization']) expect(res.headers[h]).toBeUndefined()
    // PHP answered `Connection: close`: that was its connection to the proxy, not the client's.
    expect(res.connection?.toLowerCase()).toBe('keep-alive')
    expect(res.reused).toBe(true)
    expect(status(run.out)).toBe(418)
  })

  it("keepPassCookie forwards the pass; trustProxy: a trusted hop's client is the origin's client, in the proxy's own headers", async () => {
    const read = async (base: string, headers: Record<string, string> = {}) => {
      const t = await (await fetch(`${base}/headers`, { headers })).text()
      return JSON.parse(t.slice(t.indexOf('{'))) as Record<string, string>
    }
    const keep = (await proxy({ target: php.url, keepPassCookie: true })).base
    const first = await fetch(`${keep}/`)
    const pass = first.headers
      .getSetCookie()
      .find((c) => c.startsWith('airlock_pass='))!
      .split(';')[0]!
    expect((await read(keep, { cookie: pass })).cookie).toBe(pass)
    const claims = { 'x-real-ip': '6.6.6.6', forwarded: 'for=6.6.6.6', 'x-forwarded-for': '6.6.6.6' }
    const trusting = await read((await proxy({ target: php.url, trustProxy: ['127.0.0.0/8'] })).base, claims)
    expect(trusting['x-real-ip']).toBe('6.6.6.6')
    expect(trusting.forwarded).toMatch(/^for=6\.6\.6\.6;host="127\.0\.0\.1:\d+";proto=http$/)
    expect(trusting['x-forwarded-for']).toBe('6.6.6.6, 127.0.0.1')
    const elsewhere = await read((await proxy({ target: php.url, trustProxy: '10.0.0.0/8' })).base, claims)
    expect(elsewhere['x-real-ip']).toBe('127.0.0.1')
    expect(elsewhere['x-forwarded-for']).toBe('127.0.0.1')
  })

  it("the origin's Airlock-Command: release frees the visitor's place at once, clears the pass, and never reaches the client", async () => {
    const { base, proxy: p } = await proxy({ target: php.url, limit: 1, metricsPath: '/metrics' })
    const first = await fetch(`${base}/`)
    const pass = first.headers
      .getSetCookie()
      .find((c) => c.startsWith('airlock_pass='))!
      .split(';')[0]!
    expect((await fetch(`${base}/`, { headers: { accept: 'application/json' } })).status).toBe(503)
    const released = await fetch(`${base}/release`, { headers: { cookie: pass } })
    expect(await released.text()).toBe('released')
    expect(released.headers.get('airlock-command')).toBeNull()
    expect(released.headers.getSetCookie().find((c) => c.startsWith('airlock_pass='))).toMatch(
      /Max-Age=0|Expires=Thu, 01 Jan 1970/i,
    )
    const t0 = performance.now()
    await until(
      async () => (await fetch(`${base}/`, { headers: { accept: 'application/json' } })).status === 200,
      2_000,
      5,
    )
    expect(performance.now() - t0).toBeLessThan(100)
    expect((await p.gate!.state()).held).toBe(1)
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(
      /^airlock_released_total\{gate="default",by="origin"\} 1$/m,
    )
  })
})

/** The Node origin of the describes below (origins.ts): `/hang`, `/break`, `/ws`, and `ok`. */
let origin: Awaited<ReturnType<typeof nodeOrigin>>
beforeAll(async () => {
  origin = await nodeOrigin()
})
afterAll(async () => origin?.stop())

describe('WebSockets and a hanging origin', () => {
  const openSocket = (url: string): Promise<WebSocket> =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(url)
      ws.on('open', () => resolve(ws))
      ws.on('unexpected-response', (_q, r) => reject(new Error(`status ${r.statusCode}`)))
      ws.on('error', reject)
    })

  it('request mode: an open WebSocket holds its slot; 100 opened and closed leave no slot held 100 ms after the last close', {
    timeout: 20_000,
  }, async () => {
    const { base, proxy: p } = await proxy({ target: origin.url, limit: 1, mode: 'request', ttl: 30_000 })
    const ws = await openSocket(`${base.replace('http', 'ws')}/ws`)
    expect((await fetch(`${base}/`, { headers: { accept: 'application/json' } })).status).toBe(503)
    ws.close()
    await until(async () => (await fetch(`${base}/`)).status === 200, 2_000, 10)
    await p.close()
    proxies.length = 0
    const wide = await proxy({ target: origin.url, limit: 100, mode: 'request', ttl: 30_000 })
    const sockets = await Promise.all(
      Array.from({ length: 100 }, () => openSocket(`${wide.base.replace('http', 'ws')}/ws`)),
    )
    expect((await wide.proxy.gate!.state()).held).toBe(100)
    await closeAll(sockets)
    await sleep(100)
    // Before: every upgrade kept its slot until ttl (plain requests got 503 for 10 s after 3 sockets at limit 3).
    expect((await wide.proxy.gate!.state()).held).toBe(0)
  })

  it('request mode: an upgrade the origin refuses (400 for an unknown path) gives its slot back at once', async () => {
    const { base, proxy: p } = await proxy({ target: origin.url, limit: 1, mode: 'request', ttl: 30_000 })
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${base.replace('http', 'ws')}/no-such-socket`)
      ws.on('unexpected-response', (_q, r) => resolve(r.statusCode ?? 0))
      ws.on('error', () => resolve(-1))
    })
    expect(status).toBe(400)
    await sleep(100)
    expect((await p.gate!.state()).held).toBe(0)
  })

  it('a hanging origin: every request answered 504 within upstreamTimeout + 0.5 s, the slot freed; the 504 page retries by itself', {
    timeout: 20_000,
  }, async () => {
    const { base, proxy: p } = await proxy({ target: origin.url, limit: 5, mode: 'request', upstreamTimeout: 1_000 })
    const t0 = performance.now()
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        fetch(`${base}/hang`, { headers: i === 0 ? { accept: 'application/json' } : {} }),
      ),
    )
    expect(performance.now() - t0).toBeLessThan(1_500)
    expect(answers.map((a) => a.status)).toEqual([504, 504, 504, 504, 504])
    expect(answers.map((a) => a.headers.get('airlock'))).toEqual(Array(5).fill('origin-error; reason=timeout'))
    expect(await answers[0]!.json()).toMatchObject({ status: 'gateway-timeout' })
    const page = await answers[1]!.text()
    expect(page).toContain('taking too long')
    expect(page).toContain('location.replace')
    expect(answers[1]!.headers.get('retry-after')).toBe('10')
    // (A freed request slot may stay pooled for this instance for reuseWindow, 10 ms, before the store sees it.)
    await sleep(50)
    expect((await p.gate!.state()).held).toBe(0)
  })
})

describe('clients and origins that leave midway', () => {
  it('request mode: a client that leaves while the origin is still working frees its slot at once', async () => {
    const { base, proxy: p } = await proxy({ target: origin.url, limit: 1, mode: 'request' })
    const leave = new AbortController()
    const pending = fetch(`${base}/hang`, { signal: leave.signal }).catch(() => 'left')
    await until(async () => (await p.gate!.state()).held === 1, 2_000, 10)
    leave.abort()
    expect(await pending).toBe('left')
    await sleep(100)
    expect((await p.gate!.state()).held).toBe(0)
    expect((await fetch(`${base}/`)).status).toBe(200)
  })

  it('an origin that drops the connection midway: the client sees the answer cut short, the log says broken', async () => {
    let text = ''
    const { base } = await proxy({
      target: origin.url,
      limit: 2,
      mode: 'request',
      log: { destination: { write: (t: string) => (text += t) } },
    })
    const res = await fetch(`${base}/break`)
    expect(res.status).toBe(200)
    await expect(res.text()).rejects.toThrow()
    await until(() => text.includes('broke off'), 2_000, 10)
    expect(JSON.parse(text.trim().split('\n').at(-1)!)).toMatchObject({
      level: 50,
      msg: 'the origin broke off its answer',
      error: 'broken',
      upstream: 200,
    })
  })

  it('behind a trusted TLS proxy (X-Forwarded-Proto: https) the pass cookie is Secure', async () => {
    const { base } = await proxy({ target: origin.url, trustProxy: ['127.0.0.1'] })
    const res = await fetch(`${base}/`, { headers: { 'x-forwarded-proto': 'https' } })
    expect(res.headers.getSetCookie().find((c) => c.startsWith('airlock_pass='))).toMatch(/; Secure/)
    const plain = await fetch(`${base}/`)
    expect(plain.headers.getSetCookie().find((c) => c.startsWith('airlock_pass='))).not.toMatch(/; Secure/)
  })

  it('a bypass rule judges the path up to ; and as sent: /admin;.css is gated (an origin may serve it as /admin), so is /app.css;v=2 under a .css$ pattern (nginx reads the file app.css;v=2), not /static/app.css;v=2 under /static', async () => {
    const { base } = await proxy({ target: origin.url, limit: 1, bypass: [/\.css$/, '/static'] })
    expect((await hit(`${base}/admin`, { from: nextAddress() })).status).toBe(200) // the only slot
    for (const path of ['/admin;.css', '/app.css;v=2']) {
      expect(
        (await hit(`${base}${path}`, { headers: { accept: 'application/json' }, from: nextAddress() })).status,
        path,
      ).toBe(503)
    }
    expect((await hit(`${base}/app.css`, { from: nextAddress() })).status).toBe(200)
    expect((await hit(`${base}/static/app.css;v=2`, { from: nextAddress() })).status).toBe(200)
  })

  it("the client share counts the client behind trusted hops (the nearest untrusted X-Forwarded-For address), else the connection's", async () => {
    const get = (base: string, xff: string) =>
      fetch(`${base}/`, { headers: { accept: 'application/json', 'x-forwarded-for': xff } }).then(async (r) => [
        r.status,
        await r.text(),
      ])
    const share = '{"status":"busy","reason":"client-share","retryAfter":5}'
    // Limit 4: one unconfirmed slot per client.
    const trusted = await proxy({ target: origin.url, limit: 4, trustProxy: ['127.0.0.1', '10.0.0.0/8'] })
    expect((await get(trusted.base, '203.0.113.1'))[0]).toBe(200)
    expect((await get(trusted.base, '203.0.113.2, 10.0.0.9'))[0]).toBe(200) // 10.0.0.9: a trusted hop
    expect(await get(trusted.base, '203.0.113.1')).toEqual([503, share])
    expect(await get(trusted.base, '6.6.6.6, 203.0.113.2')).toEqual([503, share]) // what the client claimed is not trusted
    const untrusted = await proxy({ target: origin.url, limit: 4 })
    expect((await get(untrusted.base, '203.0.113.1'))[0]).toBe(200)
    expect(await get(untrusted.base, '203.0.113.2')).toEqual([503, share]) // one connection address: one client
  })

  it('an address a trusted hop wrote with a port or brackets is counted as that address (issue 38: it had no share key)', async () => {
    const get = (base: string, xff: string) =>
      fetch(`${base}/`, { headers: { accept: 'application/json', 'x-forwarded-for': xff } }).then((r) => r.status)
    const { base } = await proxy({ target: origin.url, limit: 4, trustProxy: ['127.0.0.1'] })
    expect(await get(base, '203.0.113.1:80')).toBe(200)
    expect(await get(base, '203.0.113.1:4711')).toBe(503)
    expect(await get(base, '203.0.113.1')).toBe(503)
    expect(await get(base, '[2001:db8::1]')).toBe(200)
    expect(await get(base, '[2001:db8::2]:443')).toBe(503) // the same /64
  })
})

describe('upgrades other than WebSocket (issue 38: h2c smuggling)', () => {
  /** An origin that accepts h2c as Jetty, Envoy or nghttpx do: 101, then anything on the socket is answered "TUNNEL". */
  async function h2cOrigin(): Promise<{ url: string; upgrades: string[] }> {
    const upgrades: string[] = []
    const server = createServer((req, res) => res.end(`plain ${req.url} upgrade=${req.headers.upgrade ?? 'none'}`))
    server.on('upgrade', (req, socket: Socket) => {
      upgrades.push(String(req.headers.upgrade))
      socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n')
      socket.on('data', () => socket.write('TUNNEL'))
    })
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
    stoppers.push(
      () =>
        new Promise((ok) => {
          server.closeAllConnections()
          server.close(() => ok())
        }),
    )
    return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, upgrades }
  }
  const stoppers: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const s of stoppers.splice(0)) await s()
  })

  it('Upgrade: h2c on a bypassed path with the gate full never gets a 101: it is answered as a plain request', async () => {
    const origin = await h2cOrigin()
    const { base } = await proxy({ target: origin.url, limit: 1, bypass: ['/static'], clientShare: false })
    expect((await fetch(`${base}/admin`)).status).toBe(200) // the only slot
    expect((await fetch(`${base}/admin`, { headers: { accept: 'application/json' } })).status).toBe(503)
    for (const upgrade of ['h2c', 'H2C', 'websocket, h2c', 'h2c, websocket', 'TLS/1.0', 'HTTP/2.0', 'anything']) {
      const answer = await raw(
        base,
        `GET /static/x HTTP/1.1\r\nHost: shop\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: ${upgrade}\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA`,
        '',
        { wait: 1_000 },
      )
      expect(statusOf(answer), upgrade).toBe(200)
      expect(answer, upgrade).toContain('plain /static/x upgrade=none')
      expect(answer, upgrade).toMatch(/connection: close/i)
      // The tunnel the smuggler wanted, through which /admin would be served past the gate:
      const tunnel = await raw(
        base,
        `GET /static/x HTTP/1.1\r\nHost: shop\r\nConnection: Upgrade\r\nUpgrade: ${upgrade}`,
        'GET /admin HTTP/1.1\r\nHost: shop\r\n\r\n',
        { wait: 500 },
      )
      expect(tunnel, upgrade).not.toContain('TUNNEL')
    }
    expect(origin.upgrades, 'the origin never saw an upgrade').toEqual([])
    // Gated paths too: answered by the gate as any plain request.
    expect(
      statusOf(
        await raw(
          base,
          'GET /admin HTTP/1.1\r\nHost: shop\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nAccept: application/json',
          '',
          { wait: 1_000 },
        ),
      ),
    ).toBe(503)
    // With a body, Node leaves the request unparsed: refused.
    expect(
      statusOf(
        await raw(
          base,
          'POST /static/x HTTP/1.1\r\nHost: shop\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 5',
          'hello',
          { wait: 1_000 },
        ),
      ),
    ).toBe(400)
  })
})

describe('the log', () => {
  it('an access line per request (JSON in pino shape, or pretty); the 5xx the proxy makes itself with its cause', async () => {
    let text = ''
    const destination = { write: (t: string) => (text += t) }
    const { base } = await proxy({ target: origin.url, limit: 5, upstreamTimeout: 300, log: { destination } })
    await (await fetch(`${base}/page?x=1`)).text()
    await (await fetch(`${base}/hang`)).text()
    await until(() => text.split('\n').length > 2, 2_000, 10)
    const [ok, timeout] = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(ok).toMatchObject({
      level: 30,
      msg: 'request',
      method: 'GET',
      url: '/page?x=1',
      status: 200,
      decision: 'admit',
      upstream: 200,
    })
    expect(typeof ok!.time).toBe('number')
    expect(timeout).toMatchObject({
      level: 50,
      msg: 'the origin did not answer in time',
      status: 504,
      error: 'timeout',
    })
    expect(timeout!.cause).toBe('no answer within 300 ms')
    let pretty = ''
    const down = await proxy({
      target: 'http://127.0.0.1:1',
      log: { format: 'pretty', destination: { write: (t: string) => (pretty += t) } },
    })
    expect((await fetch(`${down.base}/x`)).status).toBe(502)
    await until(() => pretty.includes('\n'), 2_000, 10)
    expect(pretty).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} ERROR the origin did not answer method=GET url=\/x status=502 .*error=refused cause=/,
    )
  })
})
