/**
 * The history storage beside a store: `historyFor(store)` picks the Redis one on a Redis store's
 * client (same prefix and budget) or one per memory store; `undefined` for any other store.
 */
import { MemoryHistory } from './history-memory.js'
import type { HistoryStorage } from './history-types.js'
import { isRedisStore } from './redis.js'
import { redisHistory } from './redis-history.js'
import type { Store } from './types.js'

export type { HistoryStorage, MinutePart, MinuteRecord } from './history-types.js'
export { FIELD_NAME, LINE_FIELD } from './history-types.js'

/** History per memory store, so every gate and reader of one memory store shares it. */
const memoryHistories = new WeakMap<object, HistoryStorage>()
/** One Redis history per Redis store (its caller keeps which scripts the server has). */
const redisHistories = new WeakMap<object, HistoryStorage>()

/** The history storage beside `store`, or `undefined` when it has none (a custom store). */
export function historyFor(store: Store): HistoryStorage | undefined {
  if (isRedisStore(store)) {
    let history = redisHistories.get(store)
    if (!history) {
      history = redisHistory({ client: store.client, prefix: store.prefix, commandTimeout: store.commandTimeout })
      redisHistories.set(store, history)
    }
    return history
  }
  if (store.kind === 'memory') {
    let history = memoryHistories.get(store)
    if (!history) {
      history = new MemoryHistory(store)
      memoryHistories.set(store, history)
    }
    return history
  }
  return undefined
}
