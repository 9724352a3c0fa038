/**
 * `airlock-shield/testing`: the store contract suite, for authors of custom stores.
 *
 * Every store that ships with the package (memory, Redis, Redis Cluster) runs this suite unchanged;
 * run it against yours with your test runner's API injected (vitest or jest):
 *
 * ```ts
 * import { afterAll, beforeAll, describe, expect, it } from 'vitest'
 * import { storeContract } from 'airlock-shield/testing'
 *
 * storeContract({ describe, it, expect, beforeAll, afterAll }, 'my store', async () => {
 *   const store = myStore()
 *   return { store, close: () => store.close() }
 * })
 * ```
 *
 * Real time, short ttls (the suite takes a few seconds). Each case uses a fresh semaphore name, so
 * one store serves the whole suite. A case one store passes and another fails is a bug in one of them.
 * @packageDocumentation
 */
import { randomBytes } from 'node:crypto'
import type { AcquireRequest, QueueRequest, Store } from '../stores/types.js'
import { controlCases } from './control.js'
import { lineCases } from './line.js'
import { shareCases } from './share.js'
import { slotCases } from './slots.js'

/** The matchers the suite uses: vitest's and jest's `expect` fit. */
export interface Matchers {
  toBe(expected: unknown): void
  toEqual(expected: unknown): void
  toMatchObject(expected: object): void
  toHaveLength(length: number): void
  toBeGreaterThan(n: number): void
  toBeGreaterThanOrEqual(n: number): void
  toBeLessThanOrEqual(n: number): void
  toContain(item: unknown): void
  readonly not: Matchers
}

/** The test runner's API the suite needs (vitest's and jest's globals fit). */
export interface TestApi {
  describe(name: string, fn: () => void): void
  it(name: string, fn: () => Promise<void>): void
  expect(actual: unknown): Matchers
  beforeAll(fn: () => Promise<void>): void
  afterAll(fn: () => Promise<void>): void
}

/** What the factory given to {@link storeContract} returns. */
export interface ContractTarget {
  store: Store
  /** Called once after the suite (close the store and its connections). */
  close(): Promise<void>
}

/** What each case gets: a fresh semaphore name on the store, and request builders. */
export interface ContractContext {
  /** A semaphore name no other case uses, and the store. */
  fresh(): { name: string; store: Store }
  /** An acquire request with a new token (limit 2, ttl 5 s, weight 1 unless overridden). */
  req(over?: Partial<AcquireRequest>): AcquireRequest
  /** A new random token. */
  token(): string
}

/** The line settings most cases use. */
export const LINE: QueueRequest = { order: 'fifo', idleTimeout: 5_000, claimWindow: 5_000, maxLength: 0 }

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Registers the store contract suite (`describe('Store contract: <label>')`, about 30 cases) with
 * the given test API. `make` is called once before the cases.
 */
export function storeContract(api: TestApi, label: string, make: () => Promise<ContractTarget>): void {
  api.describe(`Store contract: ${label}`, () => {
    let target: ContractTarget | undefined
    let n = 0
    const token = (): string => randomBytes(9).toString('base64url')
    const ctx: ContractContext = {
      fresh() {
        if (!target) throw new Error('storeContract: the store is made in beforeAll')
        return { name: `contract-${label.replace(/[^A-Za-z0-9._:-]/g, '_')}-${++n}-${token()}`, store: target.store }
      },
      req: (over = {}) => ({ token: token(), limit: 2, ttl: 5_000, weight: 1, ...over }),
      token,
    }
    api.beforeAll(async () => {
      target = await make()
    })
    api.afterAll(async () => {
      await target?.close()
    })
    slotCases(api, ctx)
    api.describe('the line', () => lineCases(api, ctx))
    api.describe('live control', () => controlCases(api, ctx))
    api.describe('client shares', () => shareCases(api, ctx))
  })
}
