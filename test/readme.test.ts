/**
 * The README's recipes run as written (issue 26). A code block the README marks with
 * `<!-- recipe: NAME -->` on the line before its fence is a whole program (or page); unmarked
 * blocks are fragments. Recipes that moved from the README to a page of docs/ (PAGES) are marked
 * there the same way and checked the same. Each marked block runs here against the repository's source (its
 * `airlock-shield` imports resolve to src/ through tsconfig.json "paths", as for the examples) and
 * is checked to do what the README says: servers are started, visited and stopped. What a recipe
 * names but leaves to the reader (`store`, `buildReport`, `legacyErp`) is defined before it, in
 * RECIPES below, which also says how each is checked. The TypeScript ones also compile (strict).
 */
import { execFile, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { redisStore, type RedisStore } from '../src/stores/redis.js'
import { cleanUpExamples, exited, listening, root, startIn } from './helpers/examples.js'
import { freePort, redisAvailable, requireRedis, startRedis, type PrivateRedis } from './helpers/redis.js'
import { Browser } from './http/harness.js'

requireRedis()
cleanUpExamples()

const SECRET = 'readme-recipes-secret-of-at-least-32-bytes'
const hasPhp = spawnSync('php', ['--version']).status === 0

/** The README, and the pages its recipes moved to. */
const PAGES = ['README.md', 'docs/stacks.md', 'docs/proxy.md', 'docs/semaphore.md'] as const
const text = Object.fromEntries(PAGES.map((page) => [page, readFileSync(join(root, page), 'utf8')])) as Record<
  (typeof PAGES)[number],
  string
>
/** The marked blocks of every page: name, language, code, page. */
const marked = PAGES.flatMap((page) =>
  [...text[page].matchAll(/^<!-- recipe: ([a-z0-9-]+) -->\n```(\w+)\n([\s\S]*?)^```$/gm)].map(
    ([, name, lang, code]) => ({ name: name!, lang: lang!, code: code!, page }),
  ),
)
/** A recipe's file: PHP as a page, JavaScript as an ES module (the README's `node server.mjs`), TypeScript as it is. */
const EXTENSION: Record<string, string> = { php: 'php', js: 'mjs', ts: 'ts' }

/** A legacy backend that counts the calls inside it at once (`this` is used: an unbound method fails). */
const LEGACY_ERP = `
class LegacyErp {
  calls: string[] = []
  inside = 0
  most = 0
  async fetchInvoice(id: string): Promise<string> {
    this.calls.push(id)
    this.most = Math.max(this.most, ++this.inside)
    await new Promise((resolve) => setTimeout(resolve, 50))
    this.inside--
    return 'invoice ' + id
  }
}
const legacyErp = new LegacyErp()
`

interface Context {
  /** The recipe's file, written in a directory of its own (node_modules: the repository's). */
  file: string
  dir: string
  /** REDIS_URL (a private server), AIRLOCK_SECRET and how tsx finds src/. */
  env: Record<string, string>
  /** Slots held on the private Redis by the gate or semaphore `name`. */
  held: (name: string) => Promise<number>
}

interface Recipe {
  /** Code before the recipe: what it names but leaves to the reader (imports aliased: the recipe may import the same names). */
  before?: string
  /** Code after it: uses what it defines and reports what `check` reads. */
  after?: string
  /** What it needs beyond Node: a Redis server (private, spawned here) or PHP. */
  needs?: 'redis' | 'php'
  check: (c: Context) => Promise<void>
}

const node = (file: string): [string, string[]] => [process.execPath, ['--import', 'tsx', file]]
const run = (c: Context, env: Record<string, string> = {}) =>
  promisify(execFile)(...node(c.file), { cwd: c.dir, env: { ...process.env, ...c.env, ...env }, timeout: 30_000 })

/** Starts the recipe's server on a free port (`PORT`, as the recipe reads it); resolves with its address once it listens. */
async function serve(c: Context): Promise<string> {
  const port = await freePort()
  await startIn(c.dir, ...node(c.file), { ...c.env, PORT: String(port) }, () => listening(port))
  return `http://127.0.0.1:${port}`
}

/** Visitors each from an address of their own (the client share counts by address), one request each. */
async function visitors(url: string, path: string, n: number) {
  const answers = []
  for (let i = 0; i < n; i++) answers.push(await new Browser(url).get(path))
  return answers
}

/**
 * The stacks' recipes (fetch, Hono, Koa; memory store, limit 20): a visitor gets in with a pass,
 * 19 more fill the gate and the next one gets the busy page, the pass holder goes on, /health is
 * never gated, logout frees the place for a newcomer.
 */
async function checkStack(c: Context): Promise<void> {
  const url = await serve(c)
  const visitor = new Browser(url)
  const home = await visitor.get('/')
  expect([home.status, home.body]).toEqual([200, 'hello'])
  expect(visitor.jar.has('airlock_pass')).toBe(true)
  expect((await visitors(url, '/', 20)).map((r) => r.status)).toEqual([...Array<number>(19).fill(200), 503])
  expect((await visitor.get('/')).status).toBe(200)
  const health = await new Browser(url).get('/health')
  expect([health.status, health.body, health.cookies]).toEqual([200, 'ok', []])
  const out = await visitor.get('/logout', { method: 'POST' })
  expect([out.status, JSON.parse(out.body)]).toEqual([200, { released: true }])
  expect((await new Browser(url).get('/')).status).toBe(200)
}

/**
 * The first apps of the README (memory store, limit 1, no secret): the first visitor gets in with a
 * pass and brings it back (confirmed); the next, cookie-less and from the same address as curl in a
 * terminal, gets the busy page (the slot is taken: no client-share reason), or its JSON; the first
 * goes on.
 */
async function checkTry(c: Context): Promise<void> {
  const url = await serve(c)
  const visitor = new Browser(url)
  const home = await visitor.get('/')
  expect([home.status, home.body]).toEqual([200, 'Welcome in!'])
  expect(visitor.jar.has('airlock_pass')).toBe(true)
  expect((await visitor.get('/')).status).toBe(200)
  const busy = await new Browser(url, visitor.address).get('/')
  expect([busy.status, busy.headers.get('retry-after'), busy.headers.get('content-type')]).toEqual([
    503,
    '5',
    'text/html; charset=utf-8',
  ])
  expect(busy.headers.get('airlock')).toBe('busy; reason=full; gate=default')
  const json = await new Browser(url, visitor.address).get('/', { headers: { accept: 'application/json' } })
  expect([json.status, JSON.parse(json.body)]).toEqual([503, { status: 'busy', reason: 'full', retryAfter: 5 }])
  expect((await new Browser(url).get('/')).status).toBe(503)
  const again = await visitor.get('/')
  expect([again.status, again.body]).toEqual([200, 'Welcome in!'])
}

const RECIPES: Record<string, Recipe> = {
  'try-fastify': { check: checkTry },
  'try-express': { check: checkTry },
  fastify: {
    needs: 'redis',
    check: async (c) => {
      const url = await serve(c)
      const visitor = new Browser(url)
      const home = await visitor.get('/')
      expect([home.status, home.body]).toEqual([200, 'hello'])
      expect(visitor.jar.has('airlock_pass')).toBe(true)
      const hook = await new Browser(url).get('/webhook')
      expect([hook.status, hook.body, hook.cookies]).toEqual([200, 'never gated', []])
      // The checkout's own gate: five at once, the sixth is turned away; none of it is the site's 20.
      const checkouts = await visitors(url, '/checkout', 6)
      expect(checkouts.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 503])
      expect(checkouts[0]!.body).toBe('own gate')
      expect([await c.held('checkout'), await c.held('default')]).toEqual([5, 1])
      const out = await visitor.get('/logout', { method: 'POST' })
      expect([out.status, JSON.parse(out.body)]).toEqual([200, { released: true }])
      expect(await c.held('default')).toBe(0)
    },
  },
  express: {
    needs: 'redis',
    check: async (c) => {
      const url = await serve(c)
      const health = await new Browser(url).get('/health')
      expect([health.status, health.body, health.cookies]).toEqual([200, 'ok', []])
      // Before the router had its route, these were five 404s that took five of the site's slots.
      const checkouts = await visitors(url, '/checkout', 6)
      expect(checkouts.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 503])
      expect(checkouts[0]!.body).toBe('own gate')
      expect([await c.held('checkout'), await c.held('default')]).toEqual([5, 0])
      const visitor = new Browser(url)
      const home = await visitor.get('/')
      expect([home.status, home.body]).toEqual([200, 'hello'])
      expect(visitor.jar.has('airlock_pass')).toBe(true)
      expect(await c.held('default')).toBe(1)
      const out = await visitor.get('/logout', { method: 'POST' })
      expect([out.status, JSON.parse(out.body)]).toEqual([200, { released: true }])
      expect(await c.held('default')).toBe(0)
    },
  },
  fetch: { check: checkStack },
  hono: { check: checkStack },
  koa: { check: checkStack },
  node: { check: checkStack },
  'cron-overlap': {
    needs: 'redis',
    before: `
import { Redis as __Redis } from 'ioredis'
import { redisStore as __redisStore } from 'airlock-shield/redis'
const __client = new __Redis(process.env.REDIS_URL!)
const store = __redisStore({ client: __client })
async function buildReport({ signal }: { signal: AbortSignal }): Promise<void> {
  console.log('building the report')
  await new Promise((resolve) => setTimeout(resolve, Number(process.env.REPORT_MS)))
  console.log(signal.aborted ? 'report aborted' : 'report built')
}
`,
    after: `
await store.close()
__client.disconnect()
`,
    check: async (c) => {
      // The same cron job started again while a run is still going skips; once it ended, it runs.
      const first = await startIn(c.dir, ...node(c.file), { ...c.env, REPORT_MS: '4000' }, /building the report/)
      expect((await run(c, { REPORT_MS: '0' })).stdout).toBe('previous run still going, skipping\n')
      expect(await exited(first.child)).toBe(0)
      expect(first.output()).toBe('building the report\nreport built\n')
      expect((await run(c, { REPORT_MS: '0' })).stdout).toBe('building the report\nreport built\n')
    },
  },
  'fragile-backend': {
    before: `
import { memoryStore as __memoryStore } from 'airlock-shield'
const store = __memoryStore()
${LEGACY_ERP}`,
    after: `
const invoices = await Promise.all(Array.from({ length: 12 }, (_, i) => getInvoice('INV-' + i)))
console.log(JSON.stringify({ invoices: invoices.length, most: legacyErp.most }))
`,
    check: async (c) => {
      expect(JSON.parse((await run(c)).stdout)).toEqual({ invoices: 12, most: 4 })
    },
  },
  throttle: {
    needs: 'redis',
    before: LEGACY_ERP,
    after: `
const more = await Promise.all(Array.from({ length: 12 }, (_, i) => fetchInvoice('INV-' + i)))
console.log(JSON.stringify({ first: legacyErp.calls[0], calls: legacyErp.calls.length, answers: more.length, most: legacyErp.most }))
await store.close()
process.exit(0) // the recipe's Redis client is the app's to close
`,
    check: async (c) => {
      // 'INV-42' went through the bound method; then 12 at once, never more than 4 inside.
      expect(JSON.parse((await run(c)).stdout)).toEqual({ first: 'INV-42', calls: 13, answers: 12, most: 4 })
    },
  },
  'checkout-release': {
    needs: 'php',
    check: async (c) => {
      // The README's page as the checkout of a PHP shop, behind `airlock proxy` (from src/) with room for one visitor.
      const shop = join(c.dir, 'shop')
      mkdirSync(shop, { recursive: true })
      writeFileSync(join(shop, 'index.php'), "<?php echo 'in the shop';\n")
      writeFileSync(join(shop, 'checkout.php'), readFileSync(c.file))
      const origin = await freePort()
      await startIn(c.dir, 'php', ['-S', `127.0.0.1:${origin}`, '-t', shop], {}, () => listening(origin))
      const port = await freePort()
      const proxy = [
        '--import',
        'tsx',
        join(root, 'src', 'cli.ts'),
        'proxy',
        '--target',
        `http://127.0.0.1:${origin}`,
        '--limit',
        '1',
        '--port',
        String(port),
      ]
      await startIn(c.dir, process.execPath, proxy, { ...c.env, REDIS_URL: '' }, () => listening(port))
      const url = `http://127.0.0.1:${port}`
      const [buyer, next] = [new Browser(url), new Browser(url)]
      expect([(await buyer.get('/')).body, (await next.get('/')).status]).toEqual(['in the shop', 503])
      const thanks = await buyer.get('/checkout.php')
      expect([thanks.status, thanks.body, thanks.headers.get('airlock-command')]).toEqual([
        200,
        'Thank you for your order!',
        null,
      ])
      const after = await next.get('/')
      expect([after.status, after.body]).toEqual([200, 'in the shop'])
    },
  },
}

describe('the README', () => {
  let dir: string
  let redis: PrivateRedis | undefined
  let client: Redis | undefined
  let store: RedisStore | undefined
  const file = (name: string) => join(dir, `${name}.${EXTENSION[marked.find((r) => r.name === name)!.lang] ?? 'ts'}`)

  beforeAll(async () => {
    // Outside the repository (a user's app), with the repository's node_modules for fastify, express, ioredis.
    dir = mkdtempSync(join(tmpdir(), 'airlock-readme-'))
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'))
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'readme-recipes', private: true, type: 'module' }))
    for (const { name, lang, code } of marked) {
      const recipe = RECIPES[name]
      writeFileSync(file(name), lang === 'php' ? code : [recipe?.before ?? '', code, recipe?.after ?? ''].join('\n'))
    }
    if (redisAvailable) {
      redis = await startRedis()
      client = new Redis(redis.url, { maxRetriesPerRequest: 1 })
      store = redisStore({ client })
    }
  }, 60_000)
  afterAll(async () => {
    await store?.close()
    client?.disconnect()
    await redis?.stop()
    rmSync(dir, { recursive: true, force: true })
  })
  beforeEach(async () => {
    await client?.flushall()
  })

  it('marks its recipes, each checked here; every block that starts a server is one', () => {
    expect(marked.map((r) => r.name).sort()).toEqual(Object.keys(RECIPES).sort())
    expect(new Set(marked.map((r) => r.name)).size).toBe(marked.length)
    const where = (page: string) => marked.filter((r) => r.page === page).map((r) => r.name)
    expect(where('README.md')).toEqual(expect.arrayContaining(['try-fastify', 'try-express', 'fastify', 'express']))
    expect(where('docs/stacks.md')).toEqual(expect.arrayContaining(['fetch', 'hono', 'koa']))
    expect(where('docs/proxy.md')).toEqual(['checkout-release'])
    expect(where('docs/semaphore.md')).toEqual(expect.arrayContaining(['cron-overlap', 'fragile-backend', 'throttle']))
    // The README's, and the semaphore page's (docs/stacks.md and docs/proxy.md also show fragments of servers in a larger app: NestJS, createProxy).
    for (const page of ['README.md', 'docs/semaphore.md'] as const) {
      const servers = [...text[page].matchAll(/```(?:ts|js)\n([\s\S]*?)^```$/gm)].filter(([, code]) =>
        /\.listen\(/.test(code!),
      )
      if (page === 'README.md') expect(servers.length).toBeGreaterThanOrEqual(4)
      for (const [, code] of servers)
        expect(
          marked.map((r) => r.code),
          page,
        ).toContain(code)
    }
  })

  it.for(Object.keys(RECIPES))(
    'recipe %s runs as written and does what the README says',
    { timeout: 60_000 },
    async (name, { skip }) => {
      const recipe = RECIPES[name]!
      if ((recipe.needs === 'redis' && !redis) || (recipe.needs === 'php' && !hasPhp)) skip(`needs ${recipe.needs}`)
      const env = {
        TSX_TSCONFIG_PATH: join(root, 'tsconfig.json'),
        REDIS_URL: redis?.url ?? '',
        AIRLOCK_SECRET: SECRET,
      }
      await recipe.check({ file: file(name), dir, env, held: async (n) => (await store!.state(n)).held })
    },
  )

  it('its TypeScript recipes compile (strict), with what they leave to the reader', () => {
    const paths = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8')).compilerOptions.paths as Record<
      string,
      string[]
    >
    const absolute = Object.fromEntries(Object.entries(paths).map(([k, [v]]) => [k, [resolve(root, v!)]]))
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          types: ['node'],
          paths: absolute,
        },
        files: marked.filter((r) => r.lang === 'ts').map((r) => file(r.name)),
      }),
    )
    const tsc = spawnSync(
      process.execPath,
      [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
      { cwd: dir, encoding: 'utf8' },
    )
    expect(tsc.stdout + tsc.stderr).toBe('')
    expect(tsc.status).toBe(0)
  }, 60_000)
})
