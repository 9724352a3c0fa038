/**
 * throttle(): a fragile legacy API must never see more than 3 calls at once. 12 callers fire at
 * the same moment; they wait their turn in arrival order and every slot is released, even when a
 * call fails. Memory store; pass a redisStore to share the limit across processes.
 *   In your app (npm install airlock-shield tsx): npx tsx node_modules/airlock-shield/examples/throttle.ts
 *   In a clone of the repository: npx tsx examples/throttle.ts
 */
import { createSemaphore, isAirlockError, throttle } from 'airlock-shield'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
let inside = 0

/** The legacy call: slow, and it falls over when too many arrive together. */
async function fetchInvoice(id: number): Promise<string> {
  inside++
  try {
    if (inside > 3) throw new Error('legacy ERP overloaded')
    await sleep(100)
    if (id === 7) throw new Error(`invoice ${id} not found`)
    return `invoice ${id}`
  } finally {
    inside--
  }
}

const erp = createSemaphore({ name: 'legacy-erp', limit: 3, ttl: 30_000 })
const getInvoice = throttle(fetchInvoice, { semaphore: erp, timeout: 2_000 })

const started = Date.now()
const results = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => getInvoice(i)))
for (const [i, r] of results.entries()) {
  console.log(
    `call ${String(i).padStart(2)}: ${r.status === 'fulfilled' ? r.value : `failed: ${(r.reason as Error).message}`}`,
  )
}
console.log(
  `12 calls in ${Date.now() - started} ms, never more than 3 inside; slots held now: ${(await erp.getState()).held}`,
)

// Not admitted in time: ERR_AIRLOCK_TIMEOUT, and fetchInvoice never runs.
const impatient = throttle(fetchInvoice, { semaphore: erp, timeout: 50 })
const holders = await Promise.all([erp.acquire(), erp.acquire(), erp.acquire()])
await impatient(99).catch((err: unknown) => {
  if (isAirlockError(err, 'ERR_AIRLOCK_TIMEOUT')) console.log(`impatient call: ${err.code} (${err.message})`)
})
await Promise.all(holders.map((lease) => lease?.release()))
