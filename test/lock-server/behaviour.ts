/**
 * The lock service's HTTP behaviour, run on the memory store and on a private Redis. Every request
 * goes over real HTTP (fetch to 127.0.0.1).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../src/stores/types.js'
import { KEYS, sleep, startService, uniqueName, type Service } from './harness.js'

export interface StoreSetup {
  store: Store
  close(): Promise<void>
}

export function lockServerBehaviour(label: string, makeStore: () => Promise<StoreSetup>): void {
  describe(`lock service on ${label}`, () => {
    let setup: StoreSetup
    let svc: Service
    beforeAll(async () => {
      setup = await makeStore()
      svc = await startService({ store: setup.store })
    })
    afterAll(async () => {
      await svc?.close()
      await setup?.close()
    })

    /** Defines a fresh resource and returns its name. */
    async function resource(timeout = 30): Promise<string> {
      const name = uniqueName(`res-${label}`)
      const created = await svc.call('POST', '/resource', { json: { name, timeout } })
      expect(created.status).toBe(201)
      return name
    }

    it('GET /health answers without a key', async () => {
      const r = await svc.call('GET', '/health', { key: null })
      expect(r.status).toBe(200)
      expect(r.body).toEqual({ ok: true })
    })

    describe('keys: READ < READ_LOCK < WRITE', () => {
      it('401 without a key, with an unknown key, and with a key below the level needed', async () => {
        const name = uniqueName('auth')
        const none = await svc.call('POST', '/resource', { key: null, json: { name } })
        expect(none.status).toBe(401)
        expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/)
        expect((none.body as { message: string }).message).toMatch(/API key is required.*WRITE/)
        const unknown = await svc.call('POST', '/resource', { key: 'not-a-key-of-this-service', json: { name } })
        expect(unknown.status).toBe(401)
        expect((unknown.body as { message: string }).message).toBe('unknown API key')
        for (const key of [KEYS.read, KEYS.readLock]) {
          const weak = await svc.call('POST', '/resource', { key, json: { name } })
          expect(weak.status).toBe(401)
          expect((weak.body as { message: string }).message).toMatch(/needs a WRITE key/)
        }
        // Nothing was created by the refused requests.
        expect((await svc.call('GET', `/resource/${name}`)).status).toBe(404)
      })

      it('each level includes the ones below it', async () => {
        const name = await resource()
        const path = `/resource/${name}/s1`
        // READ: read without locking, nothing more.
        expect((await svc.call('GET', `${path}?lock=0`, { key: KEYS.read })).status).toBe(200)
        expect((await svc.call('GET', `/resource/${name}`, { key: KEYS.read })).status).toBe(200)
        const readLocks = await svc.call('GET', path, { key: KEYS.read })
        expect(readLocks.status).toBe(401)
        expect((readLocks.body as { message: string }).message).toMatch(/needs a READ_LOCK key; yours grants READ/)
        // READ_LOCK: read, lock, unlock; not write.
        expect((await svc.call('GET', `${path}?lock=0`, { key: KEYS.readLock })).status).toBe(200)
        const locked = await svc.call('GET', path, { key: KEYS.readLock })
        expect(locked.status).toBe(200)
        const ticket = locked.headers.get('x-ticket')!
        expect((await svc.call('PUT', path, { key: KEYS.readLock, ticket, json: 1 })).status).toBe(401)
        expect((await svc.call('POST', `${path}/unlock`, { key: KEYS.read, ticket })).status).toBe(401)
        expect((await svc.call('POST', `${path}/unlock`, { key: KEYS.readLock, ticket })).status).toBe(200)
        // WRITE: everything.
        const w = await svc.call('GET', path, { key: KEYS.write })
        expect(w.status).toBe(200)
        const t2 = w.headers.get('x-ticket')!
        expect((await svc.call('PUT', path, { key: KEYS.write, ticket: t2, json: { v: 1 } })).status).toBe(204)
        expect((await svc.call('POST', `${path}/unlock`, { key: KEYS.write, ticket: t2 })).status).toBe(200)
      })

      it('accepts Authorization: Bearer as well as x-api-key', async () => {
        const name = uniqueName('bearer')
        const r = await svc.call('POST', '/resource', {
          key: null,
          headers: { authorization: `Bearer ${KEYS.write}` },
          json: { name, timeout: 5 },
        })
        expect(r.status).toBe(201)
        const bad = await svc.call('GET', `/resource/${name}`, {
          key: null,
          headers: { authorization: 'Bearer nope-nope-nope-nope' },
        })
        expect(bad.status).toBe(401)
      })
    })

    describe('resources', () => {
      it('POST /resource: 201 when created, 200 when updated; GET /resource/:name describes it', async () => {
        const name = uniqueName('printer')
        const created = await svc.call('POST', '/resource', { json: { name, timeout: 300 } })
        expect(created.status).toBe(201)
        expect(created.body).toEqual({ name, timeout: 300 })
        const again = await svc.call('POST', '/resource', { json: { name, timeout: 120 } })
        expect(again.status).toBe(200)
        expect(again.body).toEqual({ name, timeout: 120 })
        expect((await svc.call('GET', `/resource/${name}`, { key: KEYS.read })).body).toEqual({ name, timeout: 120 })
        const defaulted = uniqueName('default')
        expect((await svc.call('POST', '/resource', { json: { name: defaulted } })).body).toEqual({
          name: defaulted,
          timeout: 60,
        })
      })

      it.each([
        [{ name: 'has space' }, /resource name must be 1 to 64 characters/],
        [{ name: 'x'.repeat(65) }, /resource name must be 1 to 64 characters/],
        [{ name: 'ok', timeout: 0 }, /timeout must be whole seconds from 1 to 86400, got 0/],
        [{ name: 'ok', timeout: '300' }, /timeout must be whole seconds .* got "300"/],
        [{ name: 'ok', timeout: 1.5 }, /timeout must be whole seconds/],
        [{ name: 'ok', timout: 5 }, /unknown field 'timout'/],
        [{ timeout: 5 }, /name is required/],
        [[1, 2], /must be a JSON object/],
      ])('POST /resource %j → 400 with a message', async (json, message) => {
        const r = await svc.call('POST', '/resource', { json })
        expect(r.status).toBe(400)
        expect((r.body as { message: string }).message).toMatch(message)
      })

      it('bad JSON → 400 with a message, whatever the content type', async () => {
        const contentTypes: Record<string, string>[] = [
          { 'content-type': 'application/json' },
          { 'content-type': 'application/x-www-form-urlencoded' },
          {},
        ]
        for (const headers of contentTypes) {
          const r = await svc.call('POST', '/resource', { raw: '{"name": "x",', headers })
          expect(r.status).toBe(400)
          expect((r.body as { message: string }).message).toMatch(/JSON/)
        }
      })

      it.each(['application/x-www-form-urlencoded', 'text/plain;charset=UTF-8', 'application/octet-stream'])(
        'JSON sent as %s (curl -d, fetch defaults) is read as JSON',
        async (type) => {
          const name = uniqueName('curl')
          const r = await svc.call('POST', '/resource', {
            raw: JSON.stringify({ name, timeout: 7 }),
            headers: { 'content-type': type },
          })
          expect(r.status).toBe(201)
          expect(r.body).toEqual({ name, timeout: 7 })
        },
      )

      it('DELETE /resource/:name removes it and all its data; 404 when unknown', async () => {
        const name = await resource()
        const path = `/resource/${name}/inventory`
        const lock = await svc.call('GET', path)
        const ticket = lock.headers.get('x-ticket')!
        expect((await svc.call('PUT', path, { ticket, json: { qty: 3 }, headers: {} })).status).toBe(204)
        await svc.call('POST', `${path}/unlock`, { ticket })
        expect((await svc.call('DELETE', `/resource/${name}`, { key: KEYS.readLock })).status).toBe(401)
        expect((await svc.call('DELETE', `/resource/${name}`)).status).toBe(204)
        expect((await svc.call('DELETE', `/resource/${name}`)).status).toBe(404)
        expect((await svc.call('GET', `${path}?lock=0`)).status).toBe(404)
        expect((await svc.call('GET', `/resource/${name}`)).status).toBe(404)
        // Defined again: it starts empty.
        await svc.call('POST', '/resource', { json: { name, timeout: 30 } })
        const fresh = await svc.call('GET', `${path}?lock=0`)
        expect(fresh.status).toBe(200)
        expect(fresh.text).toBe('null')
      })

      it('404 for every route on an unknown resource', async () => {
        const path = `/resource/${uniqueName('ghost')}/s`
        expect((await svc.call('GET', path)).status).toBe(404)
        expect((await svc.call('GET', `${path}?lock=0`)).status).toBe(404)
        expect((await svc.call('PUT', path, { ticket: 'abc', json: 1 })).status).toBe(404)
        expect((await svc.call('POST', `${path}/unlock`, { ticket: 'abc' })).status).toBe(404)
      })
    })

    describe('locks', () => {
      it('lock, write, conflict, unlock, hand-over: 200/202/204/409/200/403', async () => {
        const name = await resource()
        const path = `/resource/${name}/inventory`

        const a = await svc.call('GET', `${path}?lock=1`, { key: KEYS.readLock })
        expect(a.status).toBe(200)
        expect(a.text).toBe('null') // nothing written yet
        expect(a.headers.get('content-type')).toMatch(/^application\/json/)
        const ta = a.headers.get('x-ticket')!
        expect(ta).toMatch(/^[A-Za-z0-9_-]{22}$/)

        // A new ticket takes its place in line when it is presented (tickets nobody comes back for
        // never hold up the line).
        const b = await svc.call('GET', path, { key: KEYS.readLock })
        expect(b.status).toBe(202)
        expect(b.body).toEqual({ unavailable: true, position: null, waiting: null })
        expect(b.headers.get('retry-after')).toBe('1')
        const tb = b.headers.get('x-ticket')!
        expect(tb).not.toBe(ta)
        const queued = await svc.call('GET', path, { key: KEYS.readLock, ticket: tb })
        expect(queued.status).toBe(202)
        expect(queued.body).toMatchObject({ unavailable: true, position: 1, waiting: 1 })

        expect((await svc.call('PUT', path, { ticket: ta, json: { qty: 5, sku: 'A-1' } })).status).toBe(204)
        const conflict = await svc.call('PUT', path, { ticket: tb, json: { qty: 0 } })
        expect(conflict.status).toBe(409)
        expect((conflict.body as { message: string }).message).toMatch(/another ticket holds this lock/)
        expect((await svc.call('POST', `${path}/unlock`, { ticket: tb, key: KEYS.readLock })).status).toBe(409)

        // Reading without a lock never waits and sees the last write.
        const peek = await svc.call('GET', `${path}?lock=0`, { key: KEYS.read })
        expect(peek.status).toBe(200)
        expect(peek.body).toEqual({ qty: 5, sku: 'A-1' })
        expect(peek.headers.get('x-ticket')).toBeNull()

        const unlocked = await svc.call('POST', `${path}/unlock`, { ticket: ta, key: KEYS.readLock })
        expect(unlocked.status).toBe(200)
        expect(unlocked.body).toEqual({ unlocked: true })

        // B comes back with its ticket and gets the lock and the data.
        const b2 = await svc.call('GET', path, { ticket: tb, key: KEYS.readLock })
        expect(b2.status).toBe(200)
        expect(b2.headers.get('x-ticket')).toBe(tb)
        expect(b2.body).toEqual({ qty: 5, sku: 'A-1' })

        expect((await svc.call('PUT', path, { ticket: ta, json: { qty: 9 } })).status).toBe(409) // A's lock is gone, B holds it
        expect((await svc.call('POST', `${path}/unlock`, { ticket: tb })).status).toBe(200)
        const forbidden = await svc.call('PUT', path, { ticket: ta, json: { qty: 9 } })
        expect(forbidden.status).toBe(403) // nobody holds it, and A's ticket is not a live lock
        expect((forbidden.body as { message: string }).message).toMatch(/does not hold the lock/)
        expect((await svc.call('POST', `${path}/unlock`, { ticket: tb })).status).toBe(403) // already unlocked
        expect((await svc.call('PUT', path, { ticket: 'never-issued-ticket', json: 1 })).status).toBe(403)
        expect((await svc.call('GET', `${path}?lock=0`)).body).toEqual({ qty: 5, sku: 'A-1' })
      })

      it('locking again with your own live ticket keeps the same lock', async () => {
        const name = await resource()
        const path = `/resource/${name}/s`
        const first = await svc.call('GET', path)
        const ticket = first.headers.get('x-ticket')!
        const again = await svc.call('GET', path, { ticket })
        expect(again.status).toBe(200)
        expect(again.headers.get('x-ticket')).toBe(ticket)
        expect((await svc.call('GET', path)).status).toBe(202)
        expect((await svc.call('POST', `${path}/unlock`, { ticket })).status).toBe(200)
      })

      it('each selector is its own lock with its own data', async () => {
        const name = await resource()
        const inv = await svc.call('GET', `/resource/${name}/inventory`)
        const prices = await svc.call('GET', `/resource/${name}/prices`)
        expect(inv.status).toBe(200)
        expect(prices.status).toBe(200)
        await svc.call('PUT', `/resource/${name}/inventory`, { ticket: inv.headers.get('x-ticket')!, json: ['inv'] })
        await svc.call('PUT', `/resource/${name}/prices`, { ticket: prices.headers.get('x-ticket')!, json: ['prices'] })
        expect((await svc.call('GET', `/resource/${name}/inventory?lock=0`)).body).toEqual(['inv'])
        expect((await svc.call('GET', `/resource/${name}/prices?lock=0`)).body).toEqual(['prices'])
        // A ticket of one selector is nothing on another.
        expect(
          (await svc.call('PUT', `/resource/${name}/prices`, { ticket: inv.headers.get('x-ticket')!, json: 0 })).status,
        ).toBe(409)
      })

      it('resources whose names and selectors contain ":" do not share locks', async () => {
        const base = uniqueName('shop')
        for (const name of [`${base}:a`, base]) await svc.call('POST', '/resource', { json: { name, timeout: 30 } })
        // ("<base>:a", "b") and ("<base>", "a:b") would both read "<base>:a:b" if joined naively.
        const one = await svc.call('GET', `/resource/${base}:a/b`)
        const two = await svc.call('GET', `/resource/${base}/a:b`)
        expect(one.status).toBe(200)
        expect(two.status).toBe(200)
      })

      it('tickets waiting in line get the lock in arrival order; an unlock by a waiter gives up its place', async () => {
        const name = await resource()
        const path = `/resource/${name}/s`
        const ta = (await svc.call('GET', path)).headers.get('x-ticket')!
        const b = await svc.call('GET', path)
        const c = await svc.call('GET', path)
        const d = await svc.call('GET', path)
        expect([b.status, c.status, d.status]).toEqual([202, 202, 202])
        const [tb, tc, td] = [b, c, d].map((r) => r.headers.get('x-ticket')!)
        // Places are taken in the order the tickets are presented.
        for (const [i, t] of [tb, tc, td].entries()) {
          expect((await svc.call('GET', path, { ticket: t })).body).toMatchObject({
            unavailable: true,
            position: i + 1,
          })
        }
        // B gives up: it held nothing, so the answer is 409 (A holds the lock), and B leaves the line.
        expect((await svc.call('POST', `${path}/unlock`, { ticket: tb })).status).toBe(409)
        expect((await svc.call('GET', path, { ticket: td })).body).toMatchObject({ unavailable: true, position: 2 })
        expect((await svc.call('POST', `${path}/unlock`, { ticket: ta })).status).toBe(200)
        // The freed lock is kept for the head (C); D, later in line, and newcomers wait.
        expect((await svc.call('GET', path, { ticket: td })).status).toBe(202)
        expect((await svc.call('GET', path)).status).toBe(202)
        const cGets = await svc.call('GET', path, { ticket: tc })
        expect(cGets.status).toBe(200)
        expect(cGets.headers.get('x-ticket')).toBe(tc)
        expect((await svc.call('POST', `${path}/unlock`, { ticket: tc })).status).toBe(200)
        expect((await svc.call('GET', path, { ticket: td })).status).toBe(200)
      })

      it('PUT ?unlock=1 writes and releases in one call', async () => {
        const name = await resource()
        const path = `/resource/${name}/s`
        const ticket = (await svc.call('GET', path)).headers.get('x-ticket')!
        expect((await svc.call('PUT', `${path}?unlock=1`, { ticket, json: { done: true } })).status).toBe(204)
        const next = await svc.call('GET', path)
        expect(next.status).toBe(200)
        expect(next.body).toEqual({ done: true })
      })

      it('a lock expires after the resource timeout; coming back with the ticket extends it', async () => {
        // timeout 4 s. Checkpoints come from measured request times, with a second or more of slack.
        const name = uniqueName('short')
        await svc.call('POST', '/resource', { json: { name, timeout: 4 } })
        const path = `/resource/${name}/s`
        const ta = (await svc.call('GET', path)).headers.get('x-ticket')!
        const firstExpiry = Date.now() + 4_000 // at the latest
        await sleep(2_000)
        const relockSent = Date.now()
        expect((await svc.call('GET', path, { ticket: ta })).status).toBe(200) // extended to now + 4 s
        const relockDone = Date.now()
        // Past A's first expiry, yet before the extended one (at least relockSent + 4 s): still A's.
        await sleep(Math.max(0, firstExpiry + 400 - Date.now()))
        expect(Date.now()).toBeLessThan(relockSent + 4_000)
        const b = await svc.call('GET', path)
        expect(b.status).toBe(202)
        const tb = b.headers.get('x-ticket')!
        // Past the extended expiry, the lock is free and B, at the head, gets it.
        await sleep(Math.max(0, relockDone + 4_500 - Date.now()))
        const b2 = await svc.call('GET', path, { ticket: tb })
        expect(b2.status).toBe(200)
        expect((await svc.call('PUT', path, { ticket: ta, json: 'late' })).status).toBe(409)
        expect((await svc.call('POST', `${path}/unlock`, { ticket: tb })).status).toBe(200)
        expect((await svc.call('PUT', path, { ticket: ta, json: 'late' })).status).toBe(403)
        expect((await svc.call('GET', `${path}?lock=0`)).text).toBe('null')
      }, 30_000)

      it('400 for a bad ticket, a missing ticket, a bad flag or a bad selector', async () => {
        const name = await resource()
        const path = `/resource/${name}/s`
        const badTicket = await svc.call('GET', path, { ticket: 'has spaces in it' })
        expect(badTicket.status).toBe(400)
        expect((badTicket.body as { message: string }).message).toMatch(/x-ticket must be/)
        const missing = await svc.call('PUT', path, { json: 1 })
        expect(missing.status).toBe(400)
        expect((missing.body as { message: string }).message).toMatch(/x-ticket header is required/i)
        expect((await svc.call('POST', `${path}/unlock`)).status).toBe(400)
        const flag = await svc.call('GET', `${path}?lock=yes`)
        expect(flag.status).toBe(400)
        expect((flag.body as { message: string }).message).toMatch(/lock must be 1 or 0/)
        const selector = await svc.call('GET', `/resource/${name}/${'s'.repeat(65)}`)
        expect(selector.status).toBe(400)
        expect((selector.body as { message: string }).message).toMatch(/selector must be 1 to 64 characters/)
        const ticket = (await svc.call('GET', path)).headers.get('x-ticket')!
        const noBody = await svc.call('PUT', path, { ticket })
        expect(noBody.status).toBe(400)
        expect((noBody.body as { message: string }).message).toMatch(/JSON body/)
        const badJson = await svc.call('PUT', path, {
          ticket,
          raw: '{oops',
          headers: { 'content-type': 'application/json' },
        })
        expect(badJson.status).toBe(400)
        expect((badJson.body as { message: string }).message).toMatch(/JSON/)
      })

      it('stores any JSON value: objects, arrays, strings, numbers, null', async () => {
        const name = await resource()
        const path = `/resource/${name}/s`
        const ticket = (await svc.call('GET', path)).headers.get('x-ticket')!
        for (const value of [{ deep: { a: [1, 'two', null] } }, ['x'], 'text', 42, true, null]) {
          expect((await svc.call('PUT', path, { ticket, json: value })).status).toBe(204)
          expect((await svc.call('GET', `${path}?lock=0`)).body).toEqual(value)
        }
      })
    })

    describe('limits', () => {
      let small: Service
      beforeAll(async () => {
        small = await startService({ store: setup.store, bodyLimit: 1024, queue: { maxLength: 1 } })
      })
      afterAll(async () => {
        await small?.close()
      })

      it('a body over bodyLimit gets 413', async () => {
        const name = uniqueName('big')
        await small.call('POST', '/resource', { json: { name } })
        const ticket = (await small.call('GET', `/resource/${name}/s`)).headers.get('x-ticket')!
        const r = await small.call('PUT', `/resource/${name}/s`, { ticket, json: { blob: 'x'.repeat(2_000) } })
        expect(r.status).toBe(413)
        expect(
          (await small.call('PUT', `/resource/${name}/s`, { ticket, json: { blob: 'x'.repeat(900) } })).status,
        ).toBe(204)
      })

      it('a line at queue.maxLength answers 503', async () => {
        const name = uniqueName('line')
        await small.call('POST', '/resource', { json: { name } })
        const path = `/resource/${name}/s`
        expect((await small.call('GET', path)).status).toBe(200)
        const [second, third] = [await small.call('GET', path), await small.call('GET', path)]
        expect((await small.call('GET', path, { ticket: second.headers.get('x-ticket')! })).status).toBe(202)
        const full = await small.call('GET', path, { ticket: third.headers.get('x-ticket')! })
        expect(full.status).toBe(503)
        expect(full.body).toMatchObject({ unavailable: true })
      })
    })

    it('a service re-created on the same store finds its resources, data and live locks', async () => {
      const name = await resource()
      const path = `/resource/${name}/s`
      const ticket = (await svc.call('GET', path)).headers.get('x-ticket')!
      await svc.call('PUT', path, { ticket, json: { kept: true } })
      await svc.close()
      svc = await startService({ store: setup.store })
      expect((await svc.call('GET', `${path}?lock=0`)).body).toEqual({ kept: true })
      expect((await svc.call('GET', path)).status).toBe(202) // the lock outlived the restart
      expect((await svc.call('POST', `${path}/unlock`, { ticket })).status).toBe(200)
    })
  })
}
