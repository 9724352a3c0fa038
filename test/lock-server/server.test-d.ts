import { describe, expectTypeOf, test } from 'vitest'
import type { FastifyInstance } from 'fastify'
import {
  createLockServer,
  memoryResources,
  type LockServerOptions,
  type ResourceStorage,
} from '../../src/lock-server.js'
import { memoryStore } from '../../src/index.js'

describe('lock service types', () => {
  test('returns a Fastify instance; options are typed', () => {
    expectTypeOf(createLockServer).returns.toEqualTypeOf<FastifyInstance>()
    createLockServer({
      store: memoryStore(),
      apiKeys: { write: 'k', readLock: ['a', 'b'] },
      bodyLimit: 1024,
      queue: { claimWindow: 2_000 },
    })
    createLockServer({ resources: memoryResources(memoryStore()), logger: { level: 'warn' }, dataFormat: 'raw' })
    createLockServer()
    // @ts-expect-error keys are strings or string arrays
    createLockServer({ apiKeys: { write: 42 } })
    // @ts-expect-error unknown level
    createLockServer({ apiKeys: { admin: 'k' } })
    expectTypeOf<LockServerOptions['resources']>().toEqualTypeOf<ResourceStorage | undefined>()
    expectTypeOf<ResourceStorage['read']>().returns.resolves.toEqualTypeOf<string | null>()
  })
})
