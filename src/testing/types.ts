/**
 * The types of the store contract suite: the test runner's API it is given, and what each case gets.
 * A leaf: the barrel (index.ts) re-exports them, the cases (slots.ts, line.ts, control.ts,
 * share.ts) import them from here.
 */
import type { AcquireRequest, Store } from '../stores/types.js'

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

/** What the factory given to `storeContract` returns. */
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
