/**
 * A visitor who is reading keeps their slot (session mode), on every adapter over real HTTP: any
 * request the gate sees that carries a provisional pass confirms it (bypassed paths, ungated routes,
 * 404s such as the favicon), and a browser's admitting page links to the gate's own confirm request
 * for pages that make no other request. Cookie-less clients still hold a slot only provisionally.
 */
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../src/stores/memory.js'
import type { Store } from '../../src/stores/types.js'
import { createSigner } from '../../src/base/signing.js'
import { encodePass, PASS_CONTEXT } from '../../src/gate/pass.js'
import { recordingLogger } from '../helpers/stores.js'
import { sleep } from '../helpers/wait.js'
import { Browser, hit, nextAddress, SECRET, useApps, type AdapterName, type AppSetup } from './harness.js'

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,*/*;q=0.8'
const PROVISIONAL = 400

const held = async (store: Store): Promise<number> => (await store.state('default')).held

export function readerBehaviour(adapter: AdapterName): void {
  describe(`${adapter}: a reader keeps their slot`, () => {
    const start = useApps(adapter)
    const gate = (store: Store, extra: AppSetup['gate'] = {}) => ({
      limit: 5,
      store,
      secret: SECRET,
      provisionalTtl: `${PROVISIONAL}ms` as const,
      passTtl: 20_000,
      bypass: ['/health'],
      logger: recordingLogger(),
      ...extra,
    })

    // Express sees only what comes after its middleware; /open is registered before it there.
    const seen = adapter === 'fastify' ? ['/health', '/missing', '/open'] : ['/health', '/missing']
    for (const path of seen) {
      it(`a provisional pass is confirmed by a request to ${path} (${path === '/health' ? 'bypassed' : path === '/open' ? 'opted out' : 'a 404'})`, async () => {
        const store = memoryStore()
        const app = await start({ gate: gate(store) })
        const reader = new Browser(app.url)
        expect((await reader.get('/kind')).body).toBe('admit')
        const asset = await reader.get(path)
        expect(asset.status).toBe(path === '/missing' ? 404 : 200)
        expect(asset.cookies.find((c) => c.startsWith('airlock_pass='))).toMatch(/~f~.*; Max-Age=20\b/)
        await sleep(PROVISIONAL + 300) // past the provisional window
        expect((await reader.get('/kind')).body).toBe('pass')
        expect(await held(store)).toBe(1)
      })
    }

    it('cookie-less requests to ungated paths take no slot; cookie-less gated ones free theirs after provisionalTtl', async () => {
      const store = memoryStore()
      // Provisional slots live 2 s here: 100 clients with connections of their own take longer than 400 ms on a busy box.
      const provisionalTtl = 2_000
      const app = await start({ gate: gate(store, { limit: 500, provisionalTtl }) })
      // Each its own client (an address of its own), as cookie-less visitors from many places.
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          hit(`${app.url}${i % 2 ? '/health' : '/missing?x=1'}`, { from: nextAddress() }),
        ),
      )
      // Express gates its 404s (it cannot tell them from routes): those hold provisional slots.
      expect(await held(store)).toBe(adapter === 'fastify' ? 0 : 50)
      await Promise.all(Array.from({ length: 200 }, () => hit(`${app.url}/`, { from: nextAddress() })))
      expect(await held(store)).toBeGreaterThan(0)
      await sleep(provisionalTtl + 300)
      expect(await held(store)).toBe(0)
    })

    it("the admitting page links to the gate's confirm request, which confirms the pass before any route runs", async () => {
      const store = memoryStore()
      const app = await start({ gate: gate(store) })
      const reader = new Browser(app.url)
      const page = await reader.get('/kind')
      expect(page.body).toBe('admit')
      expect(page.headers.get('link')).toBe('<?__airlock=confirm>; rel=prefetch')
      const runs = app.stats.runs
      const confirm = await reader.get('/?__airlock=confirm')
      expect(confirm.status).toBe(204)
      expect(confirm.headers.get('cache-control')).toBe('no-store')
      expect(confirm.cookies.find((c) => c.startsWith('airlock_pass='))).toMatch(/~f~/)
      expect(app.stats.runs).toBe(runs) // the route never ran
      await sleep(PROVISIONAL + 300)
      expect((await reader.get('/kind')).body).toBe('pass')
      // A cookie-less confirm request answers 204 and takes nothing.
      const before = await held(store)
      const bare = await hit(`${app.url}/?__airlock=confirm`)
      expect(bare.status).toBe(204)
      expect(bare.cookies).toEqual([])
      expect(await held(store)).toBe(before)
    })

    it('sends no link to API clients nor with confirm: false (then the query is an ordinary request)', async () => {
      const app = await start({ gate: gate(memoryStore()) })
      const api = await hit(`${app.url}/kind`, { headers: { accept: 'application/json' } })
      expect(api.body).toBe('admit')
      expect(api.headers.get('link')).toBeNull()
      const off = await start({ gate: gate(memoryStore(), { confirm: false }) })
      const page = await hit(`${off.url}/kind`, { headers: { accept: BROWSER_ACCEPT } })
      expect(page.headers.get('link')).toBeNull()
      const plain = await hit(`${off.url}/kind?__airlock=confirm`, { headers: { accept: BROWSER_ACCEPT } })
      expect(plain.status).toBe(200)
      expect(plain.body).toBe('admit')
    })

    it('finds the genuine pass behind many stale or planted cookies of the same name (issue 38: 32 hid it)', async () => {
      const store = memoryStore()
      const app = await start({ gate: gate(store) })
      const reader = new Browser(app.url)
      await reader.get('/kind')
      await reader.get('/kind') // a full pass now
      const genuine = reader.jar.get('airlock_pass')!
      const signer = createSigner({ secrets: SECRET, context: PASS_CONTEXT })
      const stale = (i: number) =>
        encodePass(signer, {
          gate: 'default',
          token: `gone${i}AAAAAAAAAAAAAAAA`,
          expiresAt: Date.now() + 60_000,
          provisional: false,
        })
      // Forged: the shape of a pass, a future expiry, a MAC that is not the gate's.
      const forged = (i: number) => `${stale(i).slice(0, -43)}${'A'.repeat(42)}${i % 10}`
      const planted = Array.from(
        { length: 48 },
        (_, i) => `airlock_pass=${i % 8 === 0 ? stale(i) : i % 2 ? forged(i) : `junk${i}`}`,
      )
      const r = await hit(`${app.url}/kind`, {
        headers: { cookie: [...planted, `airlock_pass=${genuine}`].join('; ') },
      })
      expect(r.body).toBe('pass')
      expect(await held(store)).toBe(1)
    })
  })
}
