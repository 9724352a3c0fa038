/**
 * The package's entry points, listed once. tsup builds them (tsup.config.ts), `npm run entries`
 * writes package.json's "exports" and "typesVersions" and tsconfig.json's "paths" from them (a test
 * fails while those differ), and the tests and benches that go through every adapter take
 * {@link ADAPTERS} (the architecture test, the HTTP suites, the option fuzz, the overhead bench):
 * where a table cannot be derived it is a `Record<AdapterName, ...>`, so a forgotten adapter fails
 * to compile. Nothing in src/ imports this file: it is data for the build and the tests.
 */

/** The framework adapters, each its own entry point (`airlock-shield/<name>`). */
export type AdapterName = 'fastify' | 'express' | 'fetch' | 'hono' | 'koa' | 'node'

/** An adapter's entry: its file, the peers it (and everything it reaches) imports, its factory's export. */
export interface AdapterEntry {
  readonly file: string
  /** The optional peers it reaches, sorted (test/architecture.test.ts checks it reaches no other). */
  readonly peers: readonly string[]
  /** The export a user calls with the gate's options (`airlockShield` is registered, not called). */
  readonly factory: string
}

export const ADAPTERS: { readonly [K in AdapterName]: AdapterEntry } = {
  fastify: { file: 'src/fastify.ts', peers: ['fastify', 'fastify-plugin'], factory: 'airlockShield' },
  express: { file: 'src/express.ts', peers: [], factory: 'airlock' },
  fetch: { file: 'src/fetch.ts', peers: [], factory: 'airlock' },
  hono: { file: 'src/hono.ts', peers: ['hono'], factory: 'airlock' },
  koa: { file: 'src/koa.ts', peers: ['koa'], factory: 'airlock' },
  node: { file: 'src/node.ts', peers: [], factory: 'airlock' },
}

/** The names of {@link ADAPTERS}, in their order. */
export const ADAPTER_NAMES = Object.keys(ADAPTERS) as AdapterName[]

/** The other entry points: the root (`airlock-shield`), the stores, the services, the tools. */
const OTHER_ENTRIES = {
  redis: 'src/redis.ts',
  'lock-server': 'src/lock-server.ts',
  testing: 'src/testing/index.ts',
  prometheus: 'src/prometheus.ts',
  dashboard: 'src/dashboard.ts',
  proxy: 'src/proxy.ts',
} as const

/** Every entry point: name (`airlock-shield/<name>`; `index` is the root) to its source file. */
export const ENTRIES: Readonly<Record<string, string>> = {
  index: 'src/index.ts',
  ...Object.fromEntries(ADAPTER_NAMES.map((name) => [name, ADAPTERS[name].file])),
  ...OTHER_ENTRIES,
}

/** The optional peers the build leaves external, so a user who does not use them never loads them. */
export const EXTERNAL_PEERS: readonly string[] = [
  ...new Set([...ADAPTER_NAMES.flatMap((name) => ADAPTERS[name].peers), 'express', 'ioredis', 'prom-client']),
]
