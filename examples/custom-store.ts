/**
 * A custom store, checked with the shipped contract suite (`airlock-shield/testing`).
 *
 * `tenantStore(inner, tenant)` lets several tenants (or apps) share one store without their
 * semaphore names clashing: each tenant's names get its own prefix. It only translates names and
 * forwards every call, so it keeps every guarantee of the store it wraps; the contract suite proves
 * it (the repository's test/testing/custom-store.test.ts runs it on a memory store and on a private
 * Redis; docs/stores.md shows how to run it on your own store).
 *
 *   In your app (npm install airlock-shield tsx): npx tsx node_modules/airlock-shield/examples/custom-store.ts
 *   In a clone of the repository: npx tsx examples/custom-store.ts
 */
import { createSemaphore, memoryStore, type AcquireRequest, type Store } from 'airlock-shield'

export function tenantStore(inner: Store, tenant: string): Store {
  if (!/^[A-Za-z0-9_-]{1,16}$/.test(tenant)) throw new TypeError('tenant must be 1 to 16 of A-Z a-z 0-9 _ -')
  const name = (n: string): string => `${tenant}.${n}`
  return {
    kind: `${inner.kind}+tenant`,
    acquire: (n: string, request: AcquireRequest) => inner.acquire(name(n), request),
    refresh: (n: string, token: string, ttl: number) => inner.refresh(name(n), token, ttl),
    release: (n: string, token: string) => inner.release(name(n), token),
    leave: (n: string, token: string, keepOut?: boolean) => inner.leave(name(n), token, keepOut),
    leaseState: (n: string, token: string) => inner.leaseState(name(n), token),
    state: (n: string) => inner.state(name(n)),
    forceReleaseAll: (n: string) => inner.forceReleaseAll(name(n)),
    subscribe: (n: string, listener: (token: string) => void) => inner.subscribe(name(n), listener),
    // Optional methods: forwarded when the inner store has them (the gate's cluster-wide status).
    ...(inner.report && inner.status
      ? {
          report: (n: string, instance: string, data: string, ttl: number) =>
            inner.report!(name(n), instance, data, ttl),
          status: (n: string) => inner.status!(name(n)),
        }
      : {}),
    // The inner store is shared: its owner closes it.
    close: async () => {},
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const shared = memoryStore()
  const a = createSemaphore({ name: 'reports', limit: 1, ttl: 10_000, store: tenantStore(shared, 'acme') })
  const b = createSemaphore({ name: 'reports', limit: 1, ttl: 10_000, store: tenantStore(shared, 'globex') })
  const [la, lb] = await Promise.all([a.acquire(), b.acquire()])
  console.log(`acme got a slot: ${la !== null}, globex got a slot: ${lb !== null} (same name, separate slots)`)
  await Promise.all([la?.release(), lb?.release()])
}
