import { afterEach, describe, expect, it, vi } from 'vitest'
import { memoryStore } from '../../src/stores/memory.js'
import { storeContract } from './contract.js'

storeContract('memory', async () => {
  const store = memoryStore()
  return { store, close: () => store.close() }
})

describe('memory store', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('follows fake timers (the clock is read at call time)', async () => {
    vi.useFakeTimers()
    const store = memoryStore()
    const req = { token: 'a', limit: 1, ttl: 60_000, weight: 1 }
    expect((await store.acquire('x', req)).status).toBe('acquired')
    expect((await store.acquire('x', { ...req, token: 'b' })).status).toBe('busy')
    vi.advanceTimersByTime(60_000)
    expect((await store.acquire('x', { ...req, token: 'b' })).status).toBe('acquired')
  })

  it('forgets an idle semaphore entirely', async () => {
    let now = 1_000
    const store = memoryStore({ now: () => now })
    await store.acquire('x', { token: 'a', limit: 1, ttl: 100, weight: 1 })
    now += 200
    expect(await store.state('x')).toEqual({ held: 0, waiting: 0 })
    expect((store as unknown as { sems: Map<string, unknown> }).sems.size).toBe(0)
  })

  it('rejects calls after close', async () => {
    const store = memoryStore()
    await store.close()
    await expect(store.acquire('x', { token: 'a', limit: 1, ttl: 100, weight: 1 })).rejects.toMatchObject({
      code: 'ERR_AIRLOCK_CLOSED',
    })
  })

  it('rejects unknown options', () => {
    expect(() => memoryStore({ nope: 1 } as never)).toThrow(/memoryStore\(\) has no option 'nope'/)
  })
})
