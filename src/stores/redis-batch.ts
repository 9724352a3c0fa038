/**
 * The Redis store's batching: decisions on one semaphore made in the same turn of the event loop
 * share one script call (ACQUIRE_MANY, RELEASE with several tokens).
 */

/** Most decisions sent in one batch call. */
const MAX_BATCH = 16

/** The decisions on one semaphore waiting for the end of the tick, and their callers. */
export interface Batch<I, O> {
  items: I[]
  settle: { resolve: (value: O) => void; reject: (err: unknown) => void }[]
}

/**
 * Coalesces decisions on one semaphore made in the same turn of the event loop into one script
 * call (up to MAX_BATCH). Each decision is still taken on its own, in arrival order, atomically;
 * the batch only shares the round trip and the script's setup. A lone decision goes out alone.
 */
export function batch<I, O>(
  batches: Map<string, Batch<I, O>>,
  name: string,
  item: I,
  run: (items: I[]) => Promise<O[]>,
): Promise<O> {
  let b = batches.get(name)
  if (!b) {
    const fresh: Batch<I, O> = { items: [], settle: [] }
    batches.set(name, fresh)
    process.nextTick(() => {
      batches.delete(name)
      for (let i = 0; i < fresh.items.length; i += MAX_BATCH) {
        const settle = fresh.settle.slice(i, i + MAX_BATCH)
        run(fresh.items.slice(i, i + MAX_BATCH)).then(
          (out) => {
            for (const [j, s] of settle.entries()) s.resolve(out[j]!)
          },
          (err: unknown) => {
            for (const s of settle) s.reject(err)
          },
        )
      }
    })
    b = fresh
  }
  b.items.push(item)
  return new Promise<O>((resolve, reject) => b.settle.push({ resolve, reject }))
}
