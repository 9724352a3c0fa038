import { describe, expectTypeOf, test } from 'vitest'
import { createSemaphore, throttle, type Throttled, type ThrottleOptions } from '../../src/index.js'

const semaphore = createSemaphore({ name: 'types', limit: 2, ttl: 1_000 })

describe('throttle types', () => {
  test('keeps parameters and this; answers a promise of the awaited result', () => {
    const sync = throttle((id: string, page: number, opts?: { raw: boolean }) => ({ id, page, raw: opts?.raw }), {
      semaphore,
    })
    expectTypeOf(sync).parameters.toEqualTypeOf<[id: string, page: number, opts?: { raw: boolean }]>()
    expectTypeOf(sync).returns.toEqualTypeOf<Promise<{ id: string; page: number; raw: boolean | undefined }>>()

    const async = throttle(async (n: number) => [n], { semaphore, timeout: 5_000 })
    expectTypeOf(async).returns.toEqualTypeOf<Promise<number[]>>() // not Promise<Promise<number[]>>

    function method(this: { base: string }, path: string): string {
      return this.base + path
    }
    const withThis = throttle(method, { semaphore })
    expectTypeOf(withThis).thisParameter.toEqualTypeOf<{ base: string }>()
    expectTypeOf(withThis).toEqualTypeOf<Throttled<{ base: string }, [path: string], string>>()

    // @ts-expect-error wrong argument type
    void sync(1, 2)
    // @ts-expect-error missing argument
    void sync('a')
  })

  test('options', () => {
    expectTypeOf<ThrottleOptions>().toHaveProperty('semaphore')
    // @ts-expect-error semaphore is required
    throttle(() => 1, { timeout: 5 })
    // @ts-expect-error timeout is a number of ms
    throttle(() => 1, { semaphore, timeout: '5s' })
    throttle(() => 1, { semaphore, timeout: Infinity, weight: 2, signal: new AbortController().signal })
  })
})
