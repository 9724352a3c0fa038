/**
 * Every answer of the shield says it is the shield's (issue 40): the `Airlock` header on each busy
 * reason, the line, the door, the admitted poll, the confirm request, "left the line" and a
 * cross-site leave, over real HTTP on every adapter; the route's own answers never carry it. A load
 * tester, an access log and a monitor tell the shield's 503 from the origin's by it.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import { airlockControl } from '../../src/core/control.js'
import { memoryStore } from '../../src/stores/memory.js'
import type { Store } from '../../src/stores/types.js'
import { until } from '../helpers/wait.js'
import { ADAPTERS, hit, nextAddress, SECRET, startApp, type TestApp } from './harness.js'

const quiet = { warn: () => {}, info: () => {} }
const HTML = { accept: 'text/html' }
const JSON_ACCEPT = { accept: 'application/json' }

/** A store whose every call fails (the gate's `onStoreError` decides). */
const brokenStore = (): Store =>
  new Proxy(memoryStore(), {
    get(target, key) {
      const v = (target as unknown as Record<string | symbol, unknown>)[key]
      if (typeof v !== 'function') return v
      return key === 'close' ? v.bind(target) : () => Promise.reject(new Error('down'))
    },
  }) as Store

const apps: TestApp[] = []
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()))
})
async function app(adapter: (typeof ADAPTERS)[number], gate: Record<string, unknown>): Promise<TestApp> {
  const a = await startApp(adapter, { gate: { name: 'shop', secret: SECRET, logger: quiet, ...gate } })
  apps.push(a)
  return a
}
const cookie = (r: { cookies: string[] }): string => r.cookies.map((c) => c.split(';')[0]).join('; ')
const zeroBits = (d: Buffer): number => {
  let n = 0
  for (const b of d) {
    if (b === 0) n += 8
    else return n + Math.clz32(b) - 24
  }
  return n
}

describe.each(ADAPTERS)('the Airlock header (%s)', (adapter) => {
  it('busy: full, client-share, closed, store-unavailable; the JSON gives the same reason; the route never carries it', async () => {
    const store = memoryStore()
    const a = await app(adapter, { limit: 2, store, clientShare: { places: 1 } })
    const first = await hit(`${a.url}/`, { from: nextAddress() })
    expect([first.status, first.headers.get('airlock')]).toEqual([200, null])
    // The same address again, without the pass: its client holds its share.
    const sameAddress = nextAddress()
    await hit(`${a.url}/`, { from: sameAddress })
    const share = await hit(`${a.url}/`, { from: sameAddress, headers: JSON_ACCEPT })
    expect([share.status, share.headers.get('airlock'), JSON.parse(share.body).reason]).toEqual([
      503,
      'busy; reason=client-share; gate=shop',
      'client-share',
    ])
    const sharePage = await hit(`${a.url}/`, { from: sameAddress, headers: HTML })
    expect(sharePage.headers.get('airlock')).toBe('busy; reason=client-share; gate=shop')
    expect(sharePage.body).toContain('Many new visits are coming from your network address at once')
    const full = await hit(`${a.url}/`, { from: nextAddress(), headers: HTML })
    expect([full.status, full.headers.get('airlock')]).toEqual([503, 'busy; reason=full; gate=shop'])
    expect(full.body).not.toContain('network address')
    const fullJson = await hit(`${a.url}/`, { from: nextAddress(), headers: JSON_ACCEPT })
    expect(JSON.parse(fullJson.body)).toEqual({ status: 'busy', reason: 'full', retryAfter: 5 })
    const problem = await hit(`${a.url}/`, { from: nextAddress(), headers: { accept: 'application/problem+json' } })
    expect([problem.headers.get('airlock'), JSON.parse(problem.body).reason]).toEqual([
      'busy; reason=full; gate=shop',
      'full',
    ])
    const head = await hit(`${a.url}/`, { method: 'HEAD', from: nextAddress() })
    expect([head.status, head.headers.get('airlock')]).toEqual([503, 'busy; reason=full; gate=shop'])

    const control = airlockControl({ name: 'shop', store })
    await control.set({ mode: 'closed' })
    await until(
      async () =>
        (await hit(`${a.url}/`, { from: nextAddress() })).headers.get('airlock') === 'busy; reason=closed; gate=shop',
      5_000,
    )

    const down = await app(adapter, { name: 'down', limit: 2, store: brokenStore(), onStoreError: 'closed' })
    const refused = await hit(`${down.url}/`, { headers: JSON_ACCEPT })
    expect([refused.status, refused.headers.get('airlock'), JSON.parse(refused.body).reason]).toEqual([
      503,
      'busy; reason=store-unavailable; gate=down',
      'store-unavailable',
    ])
  })

  it('request mode: busy; reason=full', async () => {
    const a = await app(adapter, { mode: 'request', limit: 1, store: memoryStore() })
    const slow = hit(`${a.url}/work?ms=400`)
    await until(() => a.stats.running === 1, 5_000)
    const busy = await hit(`${a.url}/`)
    expect([busy.status, busy.headers.get('airlock')]).toEqual([503, 'busy; reason=full; gate=shop'])
    expect((await slow).headers.get('airlock')).toBeNull()
  })

  it('the line: queued (202), the admitted poll, the confirm request (204), left, and a cross-site leave refused', async () => {
    const store = memoryStore()
    const a = await app(adapter, { limit: 1, store, queue: { pollInterval: 500 } })
    const inside = await hit(`${a.url}/`, { from: nextAddress(), headers: HTML })
    expect(inside.headers.get('airlock')).toBeNull()
    const confirm = await hit(`${a.url}/?__airlock=confirm`, { headers: { cookie: cookie(inside) } })
    expect([confirm.status, confirm.headers.get('airlock')]).toEqual([204, 'confirmed; gate=shop'])

    const waiter = nextAddress()
    const queued = await hit(`${a.url}/`, { from: waiter, headers: HTML })
    expect([queued.status, queued.headers.get('airlock')]).toEqual([202, 'queued; gate=shop'])
    const ticket = cookie(queued)
    const poll = await hit(`${a.url}/`, {
      from: waiter,
      headers: { ...JSON_ACCEPT, cookie: ticket, 'x-airlock-poll': '1' },
    })
    expect([poll.status, poll.headers.get('airlock')]).toEqual([202, 'queued; gate=shop'])
    await airlockControl({ name: 'shop', store }).set({ limit: 2 })
    let admitted = poll
    await until(
      async () =>
        (admitted = await hit(`${a.url}/`, {
          from: waiter,
          headers: { ...JSON_ACCEPT, cookie: ticket, 'x-airlock-poll': '1' },
        })).status === 200,
      5_000,
    )
    expect(admitted.headers.get('airlock')).toBe('admitted; gate=shop')

    const leaver = nextAddress()
    const third = await hit(`${a.url}/`, { from: leaver, headers: HTML })
    expect(third.status).toBe(202)
    const crossSite = await hit(`${a.url}/?__airlock=leave`, {
      method: 'POST',
      from: leaver,
      headers: { cookie: cookie(third), 'sec-fetch-site': 'cross-site' },
    })
    expect([crossSite.status, crossSite.headers.get('airlock')]).toEqual([403, 'refused; reason=cross-site; gate=shop'])
    const left = await hit(`${a.url}/?__airlock=leave`, {
      method: 'POST',
      from: leaver,
      headers: { ...HTML, cookie: cookie(third), 'sec-fetch-site': 'same-origin' },
    })
    expect([left.status, left.headers.get('airlock')]).toEqual([200, 'left; gate=shop'])
  })

  it('the door: challenge (202), challenge-failed (503), and the line that never moves looks like the line', async () => {
    const a = await app(adapter, { limit: 1, store: memoryStore(), queue: { challenge: { difficulty: 4 } } })
    const from = nextAddress()
    const challenged = await hit(`${a.url}/`, { from, headers: JSON_ACCEPT })
    expect([challenged.status, challenged.headers.get('airlock')]).toEqual([202, 'challenge; gate=shop'])
    const wrong = await hit(`${a.url}/`, {
      from,
      headers: { ...JSON_ACCEPT, cookie: cookie(challenged), 'x-airlock-solution': 'forged 1' },
    })
    expect([wrong.status, wrong.headers.get('airlock'), JSON.parse(wrong.body).reason]).toEqual([
      503,
      'busy; reason=challenge-failed; gate=shop',
      'challenge-failed',
    ])
    // Solved the documented way: SHA-256(challenge:nonce) starts with `difficulty` zero bits.
    const fresh = await hit(`${a.url}/`, { from: nextAddress(), headers: JSON_ACCEPT })
    const { challenge, difficulty } = JSON.parse(fresh.body) as { challenge: string; difficulty: number }
    let nonce = 0
    while (zeroBits(createHash('sha256').update(`${challenge}:${nonce}`).digest()) < difficulty) nonce++
    const solved = await hit(`${a.url}/`, {
      headers: { ...JSON_ACCEPT, cookie: cookie(fresh), 'x-airlock-solution': `${challenge} ${nonce}` },
    })
    expect([solved.status, solved.headers.get('airlock')]).toEqual([200, null]) // admitted: the route's answer

    const shadowed = await app(adapter, {
      name: 'shadow',
      limit: 1,
      store: memoryStore(),
      queue: { challenge: { difficulty: 4, failed: 'shadow' } },
    })
    const c = await hit(`${shadowed.url}/`, { headers: JSON_ACCEPT })
    const sent = await hit(`${shadowed.url}/`, {
      headers: { ...JSON_ACCEPT, cookie: cookie(c), 'x-airlock-solution': 'forged 1' },
    })
    expect([sent.status, sent.headers.get('airlock')]).toEqual([202, 'queued; gate=shadow'])
  })
})
