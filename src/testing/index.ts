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
import { controlCases } from './control.js'
import { figureCases } from './figures.js'
import { lineCases } from './line.js'
import { shareCases } from './share.js'
import { slotCases } from './slots.js'
import type { ContractContext, ContractTarget, TestApi } from './types.js'

export type { ContractContext, ContractTarget, Matchers, TestApi } from './types.js'

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
    api.describe('figures', () => figureCases(api, ctx))
  })
}
