/**
 * The semaphore as a library, on the in-memory default store (no Redis needed):
 * a "cron job" that must not overlap itself, and a fragile backend that must never see more than
 * 2 calls at once.
 *   In your app (npm install airlock-shield tsx): npx tsx node_modules/airlock-shield/examples/semaphore.ts
 *   In a clone of the repository: npx tsx examples/semaphore.ts
 * With Redis, pass `store: redisStore({ client: new Redis(url) })` and it works across processes.
 */
import { createSemaphore, isAirlockError } from 'airlock-shield'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// 1. Cron overlap: the second run finds the first still going and skips (timeout 0 = try once).
const report = createSemaphore({ name: 'nightly-report', limit: 1, ttl: 30_000 })
async function nightlyReport(run: number): Promise<void> {
  try {
    await report.run(async ({ lease }) => {
      console.log(`report run ${run}: started (fence ${lease.fence})`)
      await sleep(300)
      console.log(`report run ${run}: done`)
    })
  } catch (err) {
    if (isAirlockError(err, 'ERR_AIRLOCK_TIMEOUT')) console.log(`report run ${run}: skipped, previous run still going`)
    else throw err
  }
}
await Promise.all([nightlyReport(1), sleep(50).then(() => nightlyReport(2))])

// 2. Throttle a fragile backend: 10 calls, never more than 2 inside, the rest wait their turn (FIFO).
const legacy = createSemaphore({ name: 'legacy-erp', limit: 2, ttl: 10_000 })
let inside = 0
let most = 0
await Promise.all(
  Array.from({ length: 10 }, (_, i) =>
    legacy.run(
      async () => {
        most = Math.max(most, ++inside)
        await sleep(50)
        inside--
        return i
      },
      { timeout: 5_000 },
    ),
  ),
)
console.log(`legacy backend: 10 calls served, at most ${most} at once`)
console.log('state now:', await legacy.getState())
