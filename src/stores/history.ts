/**
 * The history storage beside a store: `historyFor(store)` answers the Redis store's own (on its
 * client, prefix and budget) or one per memory store; `undefined` for any other store.
 */
import { MemoryHistory } from './history-memory.js'
import type { HistoryStorage } from './history-types.js'
import type { Store } from './types.js'

export type { HistoryStorage, MinutePart, MinuteRecord } from './history-types.js'
export { FIELD_NAME, LINE_FIELD } from './history-types.js'

/** One history per store, so every gate and reader of one store shares it (on Redis, its scripts' cache too). */
const histories = new WeakMap<object, HistoryStorage>()

/** A store that makes its own history storage (the Redis store: so this module never loads ioredis's types). */
interface HistoryMaker {
  historyStorage(): HistoryStorage
}

/**
 * The history storage beside `store`: the one it makes (the Redis store), or one in the process
 * for a memory store; `undefined` for any other store (it keeps no history).
 */
export function historyFor(store: Store): HistoryStorage | undefined {
  let history = histories.get(store)
  if (history) return history
  const maker = (store as Partial<HistoryMaker>).historyStorage
  if (typeof maker === 'function') history = maker.call(store)
  else if (store.kind === 'memory') history = new MemoryHistory(store)
  else return undefined
  histories.set(store, history)
  return history
}
