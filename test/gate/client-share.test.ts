/**
 * Each client's share (issue 24), over real HTTP on Fastify, on the memory store and a private
 * Redis: one address flooding without cookies holds no more than its share, and visitors from other
 * addresses get in (the busy page) or get their places in arrival order (the waiting room).
 * Clients are told apart by their loopback address (127.0.x.y), as the gate sees them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Agent, request } from 'undici'
import { addressBlock, clientShareKey, clientShareSettings } from '../../src/gate/client-share.js'
import { createGate } from '../../src/gate/gate.js'
import { memoryStore } from '../../src/stores/memory.js'
import { redisStore } from '../../src/stores/redis.js'
import type { Store } from '../../src/stores/types.js'
import { requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { recordingLogger } from '../helpers/stores.js'
import { sleep } from '../helpers/wait.js'
import { Browser, SECRET, startApp, type TestApp } from '../http/harness.js'

const JSON_ACCEPT = { accept: 'application/json' }

describe('client keys', () => {
  it('an IPv4 address is its own key; IPv6 goes by /64; IPv4-mapped IPv6 is IPv4', () => {
    expect(addressBlock('203.0.113.7')).toBe('ip:203.0.113.7')
    expect(addressBlock('::ffff:203.0.113.7')).toBe('ip:203.0.113.7')
    expect(addressBlock('2001:db8:1:2:3:4:5:6')).toBe('ip:2001:db8:1:2::/64')
    expect(addressBlock('2001:db8:1:2::9')).toBe(addressBlock('2001:0db8:0001:0002:ffff::1'))
    expect(addressBlock('2001:db8::1')).toBe('ip:2001:db8:0:0::/64')
    expect(addressBlock('::1')).toBe('ip:0:0:0:0::/64')
    expect(addressBlock('fe80::1%eth0')).toBe('ip:fe80:0:0:0::/64')
    expect(addressBlock('not an address')).toBeUndefined()
  })

  it('an address as proxies write it (a port, brackets) is the address; text no parser reads is still a key (issue 38)', () => {
    expect(addressBlock('203.0.113.7:80')).toBe('ip:203.0.113.7')
    expect(addressBlock('[2001:db8::1]')).toBe('ip:2001:db8:0:0::/64')
    expect(addressBlock('[2001:db8::1]:443')).toBe('ip:2001:db8:0:0::/64')
    expect(addressBlock(' ::ffff:203.0.113.7 ')).toBe('ip:203.0.113.7')
    expect(clientShareKey(undefined, '203.0.113.7:80')).toBe('ip:203.0.113.7')
    // Before, such a client had no key, so nothing was counted against its share.
    expect(clientShareKey(undefined, 'unknown')).toMatch(/^ip#[A-Za-z0-9_-]{22}$/)
    expect(clientShareKey(undefined, 'Unknown ')).toBe(clientShareKey(undefined, 'unknown'))
  })

  it("clientKey's answer wins; a long or unusual one is hashed; none and no address: no key", () => {
    expect(clientShareKey('user:42', '203.0.113.7')).toBe('k:user:42')
    expect(clientShareKey('Ada Lovelace <ada@example.com>', undefined)).toMatch(/^k#[A-Za-z0-9_-]{22}$/)
    expect(clientShareKey('x'.repeat(500), undefined)).toMatch(/^k#[A-Za-z0-9_-]{22}$/)
    expect(clientShareKey(undefined, '203.0.113.7')).toBe('ip:203.0.113.7')
    expect(clientShareKey('', undefined)).toBeUndefined()
  })

  it('options: on by default, false turns it off, bad values name the option', () => {
    expect(clientShareSettings(undefined)).toEqual({ places: 20, slots: undefined, perMinute: 60 })
    expect(clientShareSettings(false)).toBeUndefined()
    expect(clientShareSettings({ places: 50, perMinute: 0 })).toEqual({ places: 50, slots: undefined, perMinute: 0 })
    expect(() => clientShareSettings({ places: 0 })).toThrow(/clientShare\.places must be/)
    expect(() => clientShareSettings({ place: 3 })).toThrow(/clientShare/)
    expect(() => clientShareSettings('yes')).toThrow(/clientShare must be false/)
    expect(() => createGate({ mode: 'request', clientShare: { places: 3 } })).toThrow(
      /clientShare needs mode 'session'/,
    )
    expect(() => createGate({ clientKey: 'ip' as never })).toThrow(/clientKey must be a function/)
  })
})

/** A keep-alive client from one loopback address sending `total` requests, `concurrency` at a time, at most `rate` a second. */
async function flood(url: string, from: string, total: number, concurrency: number, rate = Infinity) {
  const agent = new Agent({ localAddress: from, connections: concurrency })
  const seen = { admit: 0, queued: 0, share: 0, other: 0 }
  const t0 = Date.now()
  let sent = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < total) {
        const n = sent++
        const due = t0 + (n * 1000) / rate
        if (due > Date.now()) await sleep(due - Date.now())
        const r = await request(url, { dispatcher: agent, headers: JSON_ACCEPT })
        const body = await r.body.text()
        if (r.statusCode === 200) seen.admit++
        else if (r.statusCode === 202) seen.queued++
        else if (r.statusCode === 503 && body.includes('"reason":"client-share"')) seen.share++
        else seen.other++
      }
    }),
  )
  await agent.close()
  return seen
}

describe.each(['memory', 'redis'] as const)('a cookie-less flood from one address, on %s', (kind) => {
  let redis: PrivateRedis | undefined
  let n = 0
  const apps: TestApp[] = []
  beforeAll(async () => {
    if (kind === 'redis') {
      requireRedis()
      redis = await startRedis()
    }
  })
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()))
    await redis?.stop()
  })
  const storeFor = (): Store =>
    kind === 'memory' ? memoryStore() : redisStore({ client: redis!.client(), prefix: `share${++n}` })

  it('busy page, limit 20: a loop at 50 requests a second holds no more than its share; five visitors from other addresses all get in', async () => {
    const store = storeFor()
    const app = await startApp('fastify', { gate: { store, secret: SECRET, limit: 20, logger: recordingLogger() } })
    apps.push(app)
    const loop = flood(`${app.url}/kind`, '127.0.99.9', 150, 5, 50) // 3 s
    await sleep(1_000)
    const visitors = Array.from({ length: 5 }, () => new Browser(app.url))
    const got = await Promise.all(visitors.map(async (v) => (await v.get('/kind', { headers: JSON_ACCEPT })).body))
    const seen = await loop
    console.log(
      `busy page on ${kind}: the flood was admitted ${seen.admit} times, refused ${seen.share} times (client-share); visitors: ${got.join(', ')}`,
    )
    expect(got).toEqual(Array(5).fill('admit'))
    // Its share: a quarter of the limit in unconfirmed slots (they live 10 s, longer than the flood).
    expect(seen.admit).toBeLessThanOrEqual(5)
    expect(seen.admit).toBeGreaterThan(0)
    expect(seen.share).toBe(150 - seen.admit)
    expect((await store.state('default')).held).toBeLessThanOrEqual(10)
  }, 30_000)

  it('waiting room: 20,000 cookie-less requests from one address; 50 visitors from 50 other addresses all get places and are admitted in arrival order', async () => {
    const store = storeFor()
    const app = await startApp('fastify', {
      // The holder's pass outlives the flood however slow the box (the flood takes 10 s, a minute with a core busy).
      gate: {
        store,
        secret: SECRET,
        limit: 1,
        passTtl: 600_000,
        queue: { pollInterval: 200, confirmTimeout: 3_000 },
        logger: recordingLogger(),
      },
    })
    apps.push(app)
    const holder = new Browser(app.url)
    expect((await holder.get('/kind')).body).toBe('admit')
    expect((await holder.get('/kind')).body).toBe('pass') // confirmed: held for passTtl (60 s), not 10 s
    const t0 = Date.now()
    const loop = flood(`${app.url}/kind`, '127.0.99.8', 20_000, 20)
    const honest = Array.from({ length: 50 }, () => new Browser(app.url))
    const positions: number[] = []
    const order: number[] = []
    let open = false // the holder left: from then on, an admitted visitor leaves at once for the next
    const poll = { ...JSON_ACCEPT, 'x-airlock-poll': '1' }
    // Each visitor keeps its place by polling, as the waiting page does, until admitted.
    const waits: Promise<void>[] = []
    for (const [i, v] of honest.entries()) {
      const r = await v.get('/kind', { headers: JSON_ACCEPT })
      expect(r.status).toBe(202)
      positions.push((JSON.parse(r.body) as { position: number }).position)
      waits.push(
        (async () => {
          for (const until = Date.now() + 90_000; Date.now() < until; ) {
            await sleep(open ? 50 : 200)
            const p = await v.get('/kind', { headers: poll })
            if (p.status === 200) {
              order.push(i)
              await v.get('/logout', { method: 'POST' })
              return
            }
            expect(p.status).toBe(202)
          }
        })(),
      )
      await sleep(20)
    }
    const seen = await loop
    const took = Date.now() - t0
    console.log(
      `waiting room on ${kind}: 20,000 flood requests in ${took} ms: ${seen.queued} places, ${seen.share} refused (client-share), ${seen.admit} admitted, ${seen.other} other; honest positions ${positions.join(' ')}`,
    )
    expect(seen.other).toBe(0)
    // No more than its share of places ahead of any honest visitor (20), whatever its request rate;
    // and no more new places than its rate allows (a burst of 60, then one a second).
    for (const [i, p] of positions.entries()) expect(p).toBeLessThanOrEqual(i + 1 + 20)
    expect(seen.queued + seen.admit).toBeLessThanOrEqual(60 + Math.ceil(took / 1000))
    // The line drains one at a time (limit 1): each visitor is admitted only after everyone before it.
    expect(order).toEqual([])
    open = true
    await holder.get('/logout', { method: 'POST' })
    await Promise.all(waits)
    expect(order).toEqual([...honest.keys()])
  }, 120_000)
})
