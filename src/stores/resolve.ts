import { optionError } from '../base/errors.js'
import { received } from '../base/validate.js'
import { MemoryStore } from './memory.js'
import { STORE_METHODS, type Store } from './types.js'

/** Resolving a `store` option: the shared default, or a custom store checked for its shape. */

/**
 * Checks that `store` has the {@link Store} shape (for custom stores), with an error that names
 * what is missing.
 */
export function assertStore(store: unknown): Store {
  if (store === null || typeof store !== 'object') {
    optionError(`store must be a Store such as memoryStore() or redisStore({ client }), got ${received(store)}`)
  }
  const missing = STORE_METHODS.filter((m) => typeof (store as Record<string, unknown>)[m] !== 'function')
  if (missing.length > 0) {
    optionError(
      `store must implement the Store interface; missing ${missing.join(', ')}. ` +
        'Use memoryStore() or redisStore({ client }), or see docs/stores.md',
    )
  }
  return store as Store
}

/**
 * The process-wide memory store used when no `store` option is given. Kept in a registered global,
 * so every copy of the package loaded in one process (its ESM and CJS builds) shares it.
 */
export function defaultStore(): Store {
  const key = Symbol.for('airlock-shield.defaultStore')
  const registry = globalThis as unknown as Record<symbol, Store | undefined>
  return (registry[key] ??= new MemoryStore())
}

/** The `store` option: the default memory store when absent, else a store checked for its shape. */
export function resolveStore(store: unknown): Store {
  return store === undefined ? defaultStore() : assertStore(store)
}
