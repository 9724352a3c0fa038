import { optionError } from '../core/errors.js'
import { describe } from '../core/validate.js'
import { STORE_METHODS, type Store } from './types.js'

/**
 * Checks that `store` has the {@link Store} shape (for custom stores), with an error that names
 * what is missing.
 */
export function assertStore(store: unknown): Store {
  if (store === null || typeof store !== 'object') {
    optionError(`store must be a Store such as memoryStore() or redisStore({ client }), got ${describe(store)}`)
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
