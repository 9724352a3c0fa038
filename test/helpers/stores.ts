import { afterAll, beforeAll } from 'vitest'
import { STORE_METHODS, type Store } from '../../src/stores/types.js'

/** A store that counts the calls it forwards to a real store (memory or Redis). */
export interface CountingStore extends Store {
  calls: Record<string, number>
  total(): number
  reset(): void
}

export function countingStore(inner: Store): CountingStore {
  const calls: Record<string, number> = {}
  const store = {
    kind: inner.kind,
    calls,
    total: () => Object.values(calls).reduce((a, b) => a + b, 0),
    reset: () => {
      for (const k of Object.keys(calls)) delete calls[k]
    },
  } as unknown as CountingStore
  for (const m of STORE_METHODS) {
    ;(store as unknown as Record<string, unknown>)[m] = (...args: unknown[]) => {
      calls[m] = (calls[m] ?? 0) + 1
      return (inner[m] as (...a: unknown[]) => unknown).apply(inner, args)
    }
  }
  return store
}

/** A logger that records what it was told. */
export function recordingLogger() {
  const lines: { level: string; obj: object; msg: string | undefined }[] = []
  const at = (level: string) => (obj: object, msg?: string) => {
    lines.push({ level, obj, msg })
  }
  return { lines, warn: at('warn'), info: at('info'), error: at('error') }
}

/** A store made once for a describe block (beforeAll) and closed after it; read `.store` in tests. */
export function useStore(make: () => Promise<{ store: Store; close(): Promise<void> }>): { readonly store: Store } {
  let made: { store: Store; close(): Promise<void> } | undefined
  beforeAll(async () => {
    made = await make()
  })
  afterAll(async () => {
    await made?.close()
  })
  return {
    get store() {
      if (!made) throw new Error('useStore: read .store inside a test or hook')
      return made.store
    },
  }
}
