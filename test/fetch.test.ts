/**
 * `airlock-shield/fetch` in process, with no server at all (as on a runtime that hands the handler
 * a `Request`): the decision form for a middleware of one's own, responses whose headers cannot be
 * changed, and where the client's address comes from (the HTTP behaviour suite runs the adapter
 * over real HTTP: test/http/fetch.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { airlock, type FetchAirlock, type FetchAirlockOptions } from '../src/fetch.js'
import { memoryStore } from '../src/stores/memory.js'
import { recordingLogger } from './helpers/stores.js'

const SECRET = 'fetch-adapter-secret-of-at-least-32-bytes'
const JSON_ACCEPT = { accept: 'application/json' }

const shields: FetchAirlock[] = []
afterEach(async () => {
  await Promise.all(shields.splice(0).map((s) => s.close()))
})
function shield(options: FetchAirlockOptions): FetchAirlock {
  const s = airlock({ store: memoryStore(), secret: SECRET, logger: recordingLogger(), ...options })
  shields.push(s)
  return s
}

const get = (path: string, headers: Record<string, string> = {}) =>
  new Request(`http://shop.example${path}`, { headers })
const cookieOf = (r: Response): string => r.headers.getSetCookie()[0]!.split(';')[0]!

describe('airlock-shield/fetch', () => {
  it('check() decides for a middleware of your own: the gate answers, or finish() completes the route response', async () => {
    const gate = shield({ limit: 1 })
    const app = async (request: Request): Promise<Response> => {
      const answer = await gate.check(request)
      if (answer.response) return answer.response
      return answer.finish(new Response(`hello ${answer.decision.kind}`))
    }
    const first = await app(get('/'))
    expect([first.status, await first.text()]).toEqual([200, 'hello admit'])
    const pass = cookieOf(first)
    expect(pass).toMatch(/^airlock_pass=p1~default~/)
    const other = await app(get('/', JSON_ACCEPT))
    expect([other.status, other.headers.get('retry-after'), await other.json()]).toEqual([
      503,
      '5',
      { status: 'busy', reason: 'full', retryAfter: 5 },
    ])
    const again = await app(get('/', { cookie: pass }))
    expect([again.status, await again.text()]).toEqual([200, 'hello pass'])
    expect((await gate.gate.state()).held).toBe(1)
  })

  it("adds the pass cookie to a response whose headers cannot change (Response.redirect), and strips Airlock-Command from a route's answer", async () => {
    const gate = shield({ limit: 1 })
    const app = gate.wrap((request: Request) => {
      if (request.method === 'POST') return new Response('thanks', { headers: { 'airlock-command': 'release' } })
      return Response.redirect('http://shop.example/welcome', 302)
    })
    const moved = await app(get('/'))
    expect([moved.status, moved.headers.get('location')]).toEqual([302, 'http://shop.example/welcome'])
    const pass = cookieOf(moved)
    expect(pass).toMatch(/^airlock_pass=/)
    const done = await app(new Request('http://shop.example/checkout', { method: 'POST', headers: { cookie: pass } }))
    expect([done.status, done.headers.get('airlock-command')]).toEqual([200, null])
    expect(done.headers.getSetCookie().some((c) => /^airlock_pass=;.*Max-Age=0/.test(c))).toBe(true)
    expect((await gate.gate.state()).held).toBe(0)
  })

  it("headers: what the route's response must carry, for a middleware that never sees it (Next.js proxy.ts)", async () => {
    const gate = shield({ limit: 1 })
    const answer = await gate.check(get('/', { accept: 'text/html' }))
    expect(answer.response).toBeUndefined()
    expect(answer.headers.getSetCookie()[0]).toMatch(/^airlock_pass=p1~default~/)
    expect(answer.headers.get('link')).toBe('<?__airlock=confirm>; rel=prefetch')
    const busy = await gate.check(get('/'))
    expect(busy.response?.status).toBe(503)
  })

  it('handle(request) is the decision inside a wrapped handler, and nothing outside one', async () => {
    const gate = shield({ limit: 2 })
    const seen: (string | undefined)[] = []
    const app = gate.wrap((request: Request) => {
      seen.push(gate.handle(request).decision?.kind)
      return new Response('ok')
    })
    await app(get('/'))
    expect(seen).toEqual(['admit'])
    expect(gate.handle(get('/')).decision).toBeUndefined()
  })

  describe("the client's address (for the client share)", () => {
    // A share of at most 2 unconfirmed slots per client; visitors who never come back with their cookie.
    const share = { limit: 100, clientShare: { slots: 2 } }
    const statuses = async (app: (request: Request) => Response | Promise<Response>, requests: Request[]) => {
      const out: number[] = []
      for (const r of requests) out.push((await app(r)).status)
      return out
    }
    const ok = () => new Response('ok')

    it('without one (a Request carries none, no clientAddress, no trustProxy), no share is counted: every newcomer gets a slot', async () => {
      const app = shield(share).wrap(ok)
      expect(
        await statuses(
          app,
          Array.from({ length: 5 }, () => get('/')),
        ),
      ).toEqual([200, 200, 200, 200, 200])
    })

    it("clientAddress(request, ...context) names the client: its share holds (Bun's server.requestIP, Deno's info.remoteAddr)", async () => {
      const server = { requestIP: () => ({ address: '203.0.113.9' }) }
      const app = shield({
        ...share,
        clientAddress: (_request, context) => (context as typeof server).requestIP().address,
      }).wrap((_r: Request, _s: typeof server) => ok())
      const answers = []
      for (let i = 0; i < 4; i++) answers.push((await app(get('/', JSON_ACCEPT), server)).status)
      expect(answers).toEqual([200, 200, 503, 503])
    })

    it("trustProxy: the first X-Forwarded-For address is the client's; without it the header is not believed", async () => {
      const from = (ip: string) => get('/', { ...JSON_ACCEPT, 'x-forwarded-for': `${ip}, 10.0.0.1` })
      const trusting = shield({ ...share, name: 'trusting', trustProxy: true }).wrap(ok)
      expect(
        await statuses(trusting, [
          from('198.51.100.1'),
          from('198.51.100.1'),
          from('198.51.100.1'),
          from('198.51.100.2'),
        ]),
      ).toEqual([200, 200, 503, 200])
      const plain = shield({ ...share, name: 'plain' }).wrap(ok)
      expect(await statuses(plain, [from('198.51.100.1'), from('198.51.100.1'), from('198.51.100.1')])).toEqual([
        200, 200, 200,
      ])
    })
  })
})
