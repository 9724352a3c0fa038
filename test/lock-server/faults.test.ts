/**
 * The lock service keeps its promises under faults and abuse: a write delayed past its lock's
 * expiry never lands (checked with the write, in one step, fenced); tickets nobody comes back for
 * do not starve a lock; a deeply nested body is a 400; a request without a key is refused before
 * its body is read; fences keep increasing across a Redis restart that lost every key.
 * Real HTTP; a real private redis-server where Redis is the subject.
 */
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryStore } from '../../src/stores/memory.js'
import type { Redis } from 'ioredis'
import { redisStore, type RedisStore } from '../../src/stores/redis.js'
import type { Store } from '../../src/stores/types.js'
import {
  lockSemaphore,
  memoryResources,
  redisResources,
  type ResourceStorage,
  type WriteLock,
} from '../../src/stores/resources.js'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { KEYS, sleep, startService, uniqueName, type Service } from './harness.js'

requireRedis()

/** Resource storage whose writes for some tickets arrive late (a slow network, a paused process). */
function delayedWrites(inner: ResourceStorage, delay: Map<string, number>): ResourceStorage {
  return {
    kind: inner.kind,
    define: (n, d) => inner.define(n, d),
    get: (n) => inner.get(n),
    delete: (n) => inner.delete(n),
    read: (n, s) => inner.read(n, s),
    async write(n, s, json, lock: WriteLock) {
      await sleep(delay.get(lock.ticket) ?? 0)
      return inner.write(n, s, json, lock)
    },
  }
}

interface Target {
  label: string
  store: () => Store
  resources: (store: Store) => ResourceStorage
}

let redis: PrivateRedis | undefined
const targets: Target[] = [
  {
    label: 'memory',
    store: () => memoryStore(),
    resources: (s) => memoryResources(s as ReturnType<typeof memoryStore>),
  },
  {
    label: 'redis',
    store: () => redisStore({ client: redis!.client() }),
    resources: (s) => redisResources({ client: (s as ReturnType<typeof redisStore>).client }),
  },
]

beforeAll(async () => {
  if (redisAvailable) redis = await startRedis()
})
afterAll(async () => {
  await redis?.stop()
})

for (const target of targets) {
  describe.runIf(target.label === 'memory' || redisAvailable)(`lock service faults on ${target.label}`, () => {
    it('a write that reaches the store after its lock expired does not land over the next holder’s data', async () => {
      const store = target.store()
      const delay = new Map<string, number>()
      const svc = await startService({ store, resources: delayedWrites(target.resources(store), delay) })
      try {
        const name = uniqueName('late')
        const at = `/resource/${name}/s`
        await svc.call('POST', '/resource', { json: { name, timeout: 1 } })
        const a = (await svc.call('GET', at)).headers.get('x-ticket')!
        delay.set(a, 1_600) // A's write is on its way for 1.6 s: past its 1 s lock
        const aWrite = svc.call('PUT', at, { ticket: a, json: { by: 'A' } })
        // B waits in line with its ticket and gets the lock once A's expired.
        let b: string | undefined
        let got = false
        for (let i = 0; i < 100 && !got; i++) {
          await sleep(50)
          const r = await svc.call('GET', at, { ticket: b })
          b = r.headers.get('x-ticket') ?? b
          got = r.status === 200
        }
        expect(got).toBe(true)
        expect((await svc.call('PUT', at, { ticket: b!, json: { by: 'B' } })).status).toBe(204)
        const refused = await aWrite
        expect(refused.status).toBe(409) // A was told it no longer holds the lock (B does)
        await sleep(100)
        expect((await svc.call('GET', `${at}?lock=0`)).body).toEqual({ by: 'B' })
      } finally {
        await svc.close()
        await store.close()
      }
    })

    it('a write fenced below a later holder’s write is refused (stale), checked with the lease', async () => {
      const store = target.store()
      const resources = target.resources(store)
      try {
        const name = uniqueName('fence')
        await resources.define(name, { timeout: 30 })
        const semaphore = lockSemaphore(name, 's')
        const acquired = await store.acquire(semaphore, { token: 'holder-1', limit: 1, ttl: 30_000, weight: 1 })
        expect(acquired.status).toBe('acquired')
        const lock = { semaphore, ticket: 'holder-1' }
        expect(await resources.write(name, 's', '{"n":1}', lock)).toBe('written')
        expect(await resources.write(name, 's', '{"n":2}', { semaphore, ticket: 'someone-else' })).toBe('not-holder')
        // A later fence wrote this selector since (as after data loss or a clock step): refused.
        await store.release(semaphore, 'holder-1')
        const later = await store.acquire(semaphore, { token: 'holder-2', limit: 1, ttl: 30_000, weight: 1 })
        expect(await resources.write(name, 's', '{"n":3}', { semaphore, ticket: 'holder-2' })).toBe('written')
        await store.release(semaphore, 'holder-2')
        expect(later.status).toBe('acquired')
        if (target.label === 'redis') {
          // Forge an older holder: a live lease whose fence is below the last writer's.
          const client = (store as RedisStore<Redis>).client
          await store.acquire(semaphore, { token: 'holder-old', limit: 1, ttl: 30_000, weight: 1 })
          const [, meta] = (store as ReturnType<typeof redisStore>).keys(semaphore)
          await client.hset(meta!, 'holder-old', '1,1')
          expect(await resources.write(name, 's', '{"n":4}', { semaphore, ticket: 'holder-old' })).toBe('stale')
        }
        expect(await resources.read(name, 's')).toBe('{"n":3}')
      } finally {
        await store.close()
      }
    })

    it('tickets nobody comes back for barely dent two honest clients (one abandoned ticket a second)', async () => {
      const store = target.store()
      const svc = await startService({ store })
      try {
        // An honest client as the Small Resource Server's PHP client drives it: ask, present the new
        // ticket at once (lockData() then getData()), retry while waiting, work 10 ms, write and unlock.
        const honest = async (name: string, until: number): Promise<number> => {
          const at = `/resource/${name}/s`
          let locks = 0
          while (Date.now() < until) {
            let r = await svc.call('GET', at)
            const ticket = r.headers.get('x-ticket')!
            if (r.status === 202) r = await svc.call('GET', at, { ticket })
            while (r.status === 202 && Date.now() < until) {
              await sleep(50)
              r = await svc.call('GET', at, { ticket })
            }
            if (r.status !== 200) continue
            await sleep(10) // the work done under the lock
            await svc.call('PUT', `${at}?unlock=1`, { ticket, json: { locks } })
            locks++
          }
          return locks
        }
        const round = async (abuse: boolean): Promise<number> => {
          const name = uniqueName('abandon')
          await svc.call('POST', '/resource', { json: { name, timeout: 30 } })
          const until = Date.now() + 6_000
          let grabbed = 0
          const abuser = (async () => {
            await sleep(300) // it arrives at a busy lock (a free one it would simply hold, as any client)
            while (abuse && Date.now() < until) {
              // A new ticket, never presented again.
              if ((await svc.call('GET', `/resource/${name}/s`)).status === 200) grabbed++
              await sleep(1_000)
            }
          })()
          const counts = await Promise.all([honest(name, until), honest(name, until)])
          await abuser
          expect(grabbed).toBe(0) // it never found the lock free: the line always had an honest client
          return counts[0]! + counts[1]!
        }
        const clean = await round(false)
        const abused = await round(true)
        console.log(
          `lock service on ${target.label}: two honest clients took ${clean} locks in 6 s alone, ${abused} beside a client abandoning a ticket a second`,
        )
        expect(clean).toBeGreaterThan(20)
        // Unprotected, abandoned tickets took the honest clients from 423 locks to 4 (the issue behind
        // this); protected, the two rounds differ by a few percent on a quiet machine. The rounds run
        // one after the other, so a loaded box can slow one more than the other: half is the margin
        // (a clean-clone CI run once saw 121 against 172 on Redis, and 162 against 130 on memory).
        expect(abused).toBeGreaterThanOrEqual(clean * 0.5)
      } finally {
        await svc.close()
        await store.close()
      }
    }, 30_000)
  })
}

describe('lock service input limits', () => {
  let svc: Service
  beforeAll(async () => {
    svc = await startService({ store: memoryStore(), bodyLimit: 1024 * 1024 })
  })
  afterAll(async () => {
    await svc?.close()
  })

  it('a 10,000-deep JSON body answers 400 with a clear message (not 500)', async () => {
    const name = uniqueName('deep')
    await svc.call('POST', '/resource', { json: { name } })
    const ticket = (await svc.call('GET', `/resource/${name}/s`)).headers.get('x-ticket')!
    const deep = '['.repeat(10_000) + ']'.repeat(10_000)
    for (const [method, path, extra] of [
      ['PUT', `/resource/${name}/s`, { ticket }],
      ['POST', '/resource', {}],
    ] as const) {
      const r = await svc.call(method, path, { ...extra, raw: deep, headers: { 'content-type': 'application/json' } })
      expect(r.status).toBe(400)
      expect((r.body as { message: string }).message).toBe('the JSON body is nested deeper than 64 levels')
    }
    // 64 levels are fine.
    const ok = await svc.call('PUT', `/resource/${name}/s`, {
      ticket,
      raw: '['.repeat(64) + ']'.repeat(64),
      headers: { 'content-type': 'application/json' },
    })
    expect(ok.status).toBe(204)
  })

  it('a request without a valid key is refused (401) before its body is read: a 10 MB POST is never received', async () => {
    const u = new URL(svc.url)
    const answer = await new Promise<string>((resolve, reject) => {
      let data = ''
      const s = connect(Number(u.port), u.hostname, () => {
        // Announce 10 MB but send only the headers: the answer must come without the body.
        s.write(
          `POST /resource HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${10 * 1024 * 1024}\r\n\r\n{`,
        )
      })
      s.setTimeout(5_000, () => reject(new Error('no answer without the body: the server waited for it')))
      s.on('data', (c) => {
        data += c.toString('latin1')
        if (data.includes('\r\n\r\n')) {
          s.destroy()
          resolve(data)
        }
      })
      s.on('error', reject)
    })
    expect(answer).toMatch(/^HTTP\/1\.1 401 /)
    // With a valid key the same body is read and refused for its size.
    const big = await svc.call('POST', '/resource', {
      raw: `{"x":"${'a'.repeat(1024 * 1024)}"}`,
      headers: { 'content-type': 'application/json' },
    })
    expect(big.status).toBe(413)
    const noKey = await svc.call('POST', '/resource', {
      key: null,
      raw: '{}',
      headers: { 'content-type': 'application/json' },
    })
    expect(noKey.status).toBe(401)
    expect(noKey.headers.get('www-authenticate')).toMatch(/^Bearer/)
  })
})

describe.runIf(redisAvailable)('lock service fences across a Redis restart', () => {
  it('X-Fence keeps increasing after Redis restarts without persistence (every key lost)', async () => {
    const own = await startRedis()
    const store = redisStore({ client: own.client({ maxRetriesPerRequest: 20 }), commandTimeout: 5_000 })
    const svc = await startService({ store })
    try {
      const fences: number[] = []
      const lockOnce = async (name: string) => {
        // After the restart, the store grants nothing until a lock's timeout has passed (a lock the
        // restart erased may still be in use): the client retries, as it would on a busy lock.
        let r = await svc.call('PUT', `/resource/${name}/s/lock`, { key: KEYS.readLock })
        for (let i = 0; i < 40 && (r.body as { locked: boolean }).locked === false; i++) {
          await sleep(100)
          r = await svc.call('PUT', `/resource/${name}/s/lock`, { key: KEYS.readLock })
        }
        expect(r.body).toEqual({ locked: true })
        fences.push(Number(r.headers.get('x-fence')))
        await svc.call('PUT', `/resource/${name}/s/unlock`, { key: KEYS.readLock, ticket: r.headers.get('x-ticket')! })
      }
      const before = uniqueName('fenced')
      await svc.call('POST', '/resource', { json: { name: before, timeout: 1 } })
      for (let i = 0; i < 5; i++) await lockOnce(before)
      await own.kill()
      await own.start()
      // Every key is gone, the resource too: define it again, as a client would.
      for (
        let i = 0;
        i < 50 && (await svc.call('POST', '/resource', { json: { name: before, timeout: 1 } })).status !== 201;
        i++
      )
        await sleep(100)
      for (let i = 0; i < 3; i++) await lockOnce(before)
      for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!)
    } finally {
      await svc.close()
      await store.close()
      await own.stop()
    }
  }, 30_000)
})
