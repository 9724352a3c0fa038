/**
 * The published package, as a user gets it: built, `npm pack`ed, unpacked into a fresh
 * node_modules, then loaded with both `import` and `require` in separate Node processes.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process'
import { promisify } from 'node:util'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, posix, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cleanUpExamples, exited, startIn } from './helpers/examples.js'
import { freePort, redisAvailable, requireRedis, startRedis, type PrivateRedis } from './helpers/redis.js'

requireRedis()
cleanUpExamples()
const root = resolve(import.meta.dirname, '..')

describe('packed package', () => {
  let dir: string
  let redis: PrivateRedis | undefined
  let files: string[]
  let tarball: string

  beforeAll(async () => {
    // Inside the repo's node_modules, so the optional peer ioredis resolves as a user's would.
    dir = mkdtempSync(join(root, 'node_modules', '.airlock-pack-'))
    execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'ignore' })
    const out = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], {
      cwd: root,
      encoding: 'utf8',
    })
    const info = JSON.parse(out) as Array<{ filename: string; files: { path: string }[] }>
    files = info[0]!.files.map((f) => f.path)
    tarball = join(dir, info[0]!.filename)
    const pkgDir = join(dir, 'node_modules', 'airlock-shield')
    mkdirSync(pkgDir, { recursive: true })
    execFileSync('tar', ['-xzf', join(dir, info[0]!.filename), '-C', pkgDir, '--strip-components', '1'])
    if (redisAvailable) redis = await startRedis()
  }, 120_000)

  afterAll(async () => {
    await redis?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('ships dist, README, LICENSE and CHANGELOG, and no sources or tests', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'dist/index.js',
        'dist/index.cjs',
        'dist/index.d.ts',
        'dist/index.d.cts',
        'dist/cli.js',
        'README.md',
        'LICENSE',
        'package.json',
      ]),
    )
    expect(files.some((f) => f.startsWith('src/') || f.startsWith('test/'))).toBe(false)
  })

  it('ships no source maps, and no built file points to one', () => {
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([])
    const built = files.filter((f) => /^dist\/.*\.c?js$/.test(f))
    expect(built.length).toBeGreaterThan(10)
    const pointing = built.filter((f) =>
      readFileSync(join(dir, 'node_modules', 'airlock-shield', f), 'utf8').includes('//# sourceMappingURL='),
    )
    expect(pointing).toEqual([])
  })

  it('ships every docs/*.md, and every file the README and those docs link to (pictures too)', () => {
    const shippedDocs = files.filter((f) => f.startsWith('docs/') && f.endsWith('.md'))
    expect(shippedDocs.sort()).toEqual(
      readdirSync(join(root, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`)
        .sort(),
    )
    const linked = new Set<string>()
    for (const file of ['README.md', ...shippedDocs]) {
      for (const [, href] of readFileSync(join(root, file), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = href!.split('#')[0]!
        if (target && !/^[a-z][a-z+.-]*:/i.test(target))
          linked.add(posix.normalize(posix.join(posix.dirname(file), target)))
      }
    }
    expect([...linked]).toEqual(expect.arrayContaining(['docs/gate.md', 'docs/busy-page.png', 'docs/waiting-page.png']))
    expect([...linked].filter((f) => !files.includes(f))).toEqual([])
  })

  it('package.json names the repository, the homepage and the issue tracker', () => {
    const pkg = JSON.parse(readFileSync(join(dir, 'node_modules', 'airlock-shield', 'package.json'), 'utf8'))
    expect({ repository: pkg.repository, homepage: pkg.homepage, bugs: pkg.bugs }).toEqual({
      repository: { type: 'git', url: 'git+https://github.com/airlock-shield/airlock-shield.git' },
      homepage: 'https://github.com/airlock-shield/airlock-shield#readme',
      bugs: 'https://github.com/airlock-shield/airlock-shield/issues',
    })
  })

  const script = (load: string) => `
${load}
const sem = createSemaphore({ name: 'pkg', limit: 1, ttl: 5000 })
const lease = await sem.acquire()
const second = await sem.acquire()
let redisResult = 'skipped'
if (process.env.REDIS_URL) {
  const store = redisStore({ client: new Redis(process.env.REDIS_URL) })
  const r = createSemaphore({ name: 'pkg-' + process.pid, limit: 1, ttl: 5000, store })
  redisResult = String((await r.acquire()) !== null) + ',' + String((await r.acquire()) === null)
  store.client.disconnect()
}
let code = ''
try { createSemaphore({ name: 'x', limit: 0, ttl: 1 }) } catch (e) { code = e.code + ':' + (e instanceof AirlockError) }
const limited = throttle(async (x) => x * 2, { semaphore: sem })
const app = createLockServer({ apiKeys: { write: 'packed-package-key-0123' } })
const health = (await app.inject('/health')).statusCode
await app.close()
await lease.release()
console.log(JSON.stringify({ first: lease !== null, second: second === null, redisResult, code, throttled: await limited(21), health }))
`

  it.each([
    [
      'ESM import',
      'esm.mjs',
      "import { createSemaphore, AirlockError, throttle } from 'airlock-shield'\nimport { redisStore } from 'airlock-shield/redis'\n" +
        "import { createLockServer } from 'airlock-shield/lock-server'\nimport { Redis } from 'ioredis'",
    ],
    [
      'CJS require',
      'cjs.cjs',
      "const { createSemaphore, AirlockError, throttle } = require('airlock-shield')\nconst { redisStore } = require('airlock-shield/redis')\n" +
        "const { createLockServer } = require('airlock-shield/lock-server')\nconst { Redis } = require('ioredis')\n;(async () => {",
    ],
  ])('%s works', (_label, file, load) => {
    const body = file.endsWith('.cjs') ? `${script(load)}})()` : script(load)
    writeFileSync(join(dir, file), body)
    const run = spawnSync(process.execPath, [file], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, REDIS_URL: redis?.url ?? '' },
      timeout: 30_000,
    })
    expect(run.stderr).toBe('')
    expect(JSON.parse(run.stdout)).toEqual({
      first: true,
      second: true,
      redisResult: redis ? 'true,true' : 'skipped',
      code: 'ERR_AIRLOCK_OPTION:true',
      throttled: 42,
      health: 200,
    })
  })

  it('ESM and CJS copies in one process recognize each other (brand checks) and share the default memory store', () => {
    writeFileSync(
      join(dir, 'both.mjs'),
      `import { createRequire } from 'node:module'
import * as esm from 'airlock-shield'
import * as esmRedis from 'airlock-shield/redis'
import { Redis } from 'ioredis'
const cjs = createRequire(import.meta.url)('airlock-shield')
const cjsRedis = createRequire(import.meta.url)('airlock-shield/redis')
let err
try { cjs.createSemaphore({ name: 'x', limit: 0, ttl: 1 }) } catch (e) { err = e }
const a = await esm.createSemaphore({ name: 'both', limit: 1, ttl: 5000 }).acquire()
const b = await cjs.createSemaphore({ name: 'both', limit: 1, ttl: 5000 }).acquire()
const client = new Redis({ lazyConnect: true })
console.log(JSON.stringify({
  distinct: esm.AirlockError !== cjs.AirlockError,
  isAirlockError: esm.isAirlockError(err, 'ERR_AIRLOCK_OPTION'),
  instanceOf: err instanceof esm.AirlockError,
  sharedStore: a !== null && b === null,
  redisBrand: esmRedis.isRedisStore(cjsRedis.redisStore({ client })),
}))
client.disconnect()`,
    )
    const run = spawnSync(process.execPath, ['both.mjs'], { cwd: dir, encoding: 'utf8', timeout: 30_000 })
    expect(run.stderr).toBe('')
    expect(JSON.parse(run.stdout)).toEqual({
      distinct: true,
      isAirlockError: true,
      instanceOf: true,
      sharedStore: true,
      redisBrand: true,
    })
  })

  it('publint and @arethetypeswrong/cli find nothing wrong (every entry, every resolution mode)', () => {
    const bin = (name: string) => join(root, 'node_modules', '.bin', name)
    const publint = spawnSync(bin('publint'), [join(dir, 'node_modules', 'airlock-shield'), '--strict'], {
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(publint.status, publint.stdout + publint.stderr).toBe(0)
    expect(publint.stdout).toContain('All good!')
    const attw = spawnSync(bin('attw'), [tarball, '--format', 'ascii'], { encoding: 'utf8', timeout: 60_000 })
    expect(attw.status, attw.stdout + attw.stderr).toBe(0)
    expect(attw.stdout).toContain('No problems found')
  })

  it('the airlock executable runs a command under a Redis semaphore (ioredis resolved as a peer)', () => {
    const cli = join(dir, 'node_modules', 'airlock-shield', 'dist', 'cli.js')
    expect(spawnSync(process.execPath, [cli, '--version'], { encoding: 'utf8' }).stdout.trim()).toMatch(
      /^\d+\.\d+\.\d+/,
    )
    if (!redis) return
    const run = spawnSync(
      process.execPath,
      [
        cli,
        'exec',
        '--name',
        `pkg-cli-${process.pid}`,
        '--redis',
        redis.url,
        '--',
        process.execPath,
        '-e',
        'process.exit(3)',
      ],
      { cwd: dir, encoding: 'utf8', timeout: 30_000 },
    )
    expect(run.stderr).toBe('')
    expect(run.status).toBe(3)
  })

  describe('TypeScript projects with skipLibCheck: false, each with only its own peer installed', () => {
    const SECRET = "'consumer-secret-of-at-least-32-bytes!!'"
    const consumers: Record<
      string,
      { peers: string[]; cjs?: boolean; absent: string[]; main: string; expected: unknown }
    > = {
      express: {
        peers: ['express@^5', '@types/express@^5'],
        absent: ['fastify', 'ioredis'],
        main: `import express from 'express'
import { airlock } from 'airlock-shield/express'
import type { SemaphoreState } from 'airlock-shield'
const gate = airlock({ limit: 1, secret: ${SECRET} })
const app = express()
app.use(gate)
app.get('/', (_req, res) => { res.send(res.locals.airlock?.decision?.kind ?? 'none') })
const server = app.listen(0, '127.0.0.1', async () => {
  const url = 'http://127.0.0.1:' + (server.address() as { port: number }).port + '/'
  const first = await (await fetch(url)).text()
  const second = (await fetch(url)).status
  const state: SemaphoreState = await gate.gate.state()
  console.log(JSON.stringify({ first, second, held: state.held }))
  server.close()
  await gate.close()
})
`,
        expected: { first: 'admit', second: 503, held: 1 },
      },
      fastify: {
        peers: ['fastify@^5'],
        absent: ['express', 'ioredis'],
        main: `import Fastify from 'fastify'
import { airlockShield } from 'airlock-shield/fastify'
const app = Fastify()
await app.register(airlockShield, { limit: 1, secret: ${SECRET} })
app.get('/', async (_req, reply) => reply.airlock.decision?.kind ?? 'none')
const first = (await app.inject('/')).body
const second = (await app.inject('/')).statusCode
console.log(JSON.stringify({ first, second, gate: app.airlockGate.name }))
await app.close()
`,
        expected: { first: 'admit', second: 503, gate: 'default' },
      },
      fetch: {
        peers: [],
        absent: ['express', 'fastify', 'hono', 'koa', 'ioredis'],
        main: `import { airlock } from 'airlock-shield/fetch'
const gate = airlock({ limit: 1, secret: ${SECRET} })
const handler = gate.wrap((request: Request) => new Response(gate.handle(request).decision?.kind ?? 'none'))
const first = await (await handler(new Request('http://shop.example/'))).text()
const second = (await handler(new Request('http://shop.example/'))).status
console.log(JSON.stringify({ first, second, held: (await gate.gate.state()).held }))
await gate.close()
`,
        expected: { first: 'admit', second: 503, held: 1 },
      },
      hono: {
        peers: ['hono@^4'],
        absent: ['express', 'fastify', 'koa', 'ioredis'],
        main: `import { Hono } from 'hono'
import { airlock, type AirlockVariables } from 'airlock-shield/hono'
const gate = airlock({ limit: 1, secret: ${SECRET} })
const app = new Hono<{ Variables: AirlockVariables }>()
app.use(gate)
app.get('/', (c) => c.text(c.var.airlock?.decision?.kind ?? 'none'))
const first = await (await app.request('/')).text()
const second = (await app.request('/')).status
console.log(JSON.stringify({ first, second, held: (await gate.gate.state()).held }))
await gate.close()
`,
        expected: { first: 'admit', second: 503, held: 1 },
      },
      koa: {
        peers: ['koa@^3', '@types/koa@^3'],
        absent: ['express', 'fastify', 'hono', 'ioredis'],
        main: `import Koa from 'koa'
import { airlock } from 'airlock-shield/koa'
const gate = airlock({ limit: 1, secret: ${SECRET} })
const app = new Koa()
app.use(gate)
app.use((ctx) => { ctx.body = ctx.state.airlock?.decision?.kind ?? 'none' })
const server = app.listen(0, '127.0.0.1', async () => {
  const url = 'http://127.0.0.1:' + (server.address() as { port: number }).port + '/'
  const first = await (await fetch(url)).text()
  const second = (await fetch(url)).status
  console.log(JSON.stringify({ first, second, held: (await gate.gate.state()).held }))
  server.close()
  await gate.close()
})
`,
        expected: { first: 'admit', second: 503, held: 1 },
      },
      node: {
        peers: [],
        absent: ['express', 'fastify', 'hono', 'koa', 'ioredis'],
        main: `import { createServer } from 'node:http'
import { airlock } from 'airlock-shield/node'
const shield = airlock({ limit: 1, secret: ${SECRET} })
const server = createServer((req, res) => shield(req, res, (handle) => { res.end(handle.decision?.kind ?? 'none') }))
server.listen(0, '127.0.0.1', async () => {
  const url = 'http://127.0.0.1:' + (server.address() as { port: number }).port + '/'
  const first = await (await fetch(url)).text()
  const second = (await fetch(url)).status
  console.log(JSON.stringify({ first, second, held: (await shield.gate.state()).held }))
  server.close()
  await shield.close()
})
`,
        expected: { first: 'admit', second: 503, held: 1 },
      },
      memory: {
        peers: [],
        cjs: true,
        absent: ['express', 'fastify', 'ioredis'],
        main: `import { createSemaphore, createWaitingRoom, isAirlockError, throttle, type Lease } from 'airlock-shield'
async function main(): Promise<void> {
  const sem = createSemaphore({ name: 'jobs', limit: 1, ttl: 5000 })
  const lease: Lease | null = await sem.acquire()
  const double = throttle(async (x: number) => x * 2, { semaphore: createSemaphore({ name: 'api', limit: 2, ttl: 5000 }) })
  const room = createWaitingRoom({ name: 'room', limit: 1, ttl: 5000 })
  const entered = (await room.enter('visitor-1')).status
  let code = ''
  try { createSemaphore({ name: 'bad', limit: 0, ttl: 1 }) } catch (err) { if (isAirlockError(err)) code = err.code }
  console.log(JSON.stringify({ lease: lease !== null, busy: (await sem.acquire()) === null, doubled: await double(21), entered, code }))
}
void main()
`,
        expected: { lease: true, busy: true, doubled: 42, entered: 'admitted', code: 'ERR_AIRLOCK_OPTION' },
      },
    }
    const dirs: Record<string, string> = {}
    beforeAll(async () => {
      // Outside the repo, so no other peer can be found up the tree; installed side by side.
      await Promise.all(
        Object.entries(consumers).map(async ([name, c]) => {
          const d = mkdtempSync(join(tmpdir(), `airlock-ts-${name}-`))
          dirs[name] = d
          writeFileSync(
            join(d, 'package.json'),
            JSON.stringify({ name: `ts-${name}`, private: true, ...(c.cjs ? {} : { type: 'module' }) }),
          )
          writeFileSync(
            join(d, 'tsconfig.json'),
            JSON.stringify({
              compilerOptions: {
                strict: true,
                skipLibCheck: false,
                module: 'nodenext',
                moduleResolution: 'nodenext',
                target: 'es2022',
                outDir: 'out',
                types: ['node'],
              },
              include: ['main.ts'],
            }),
          )
          writeFileSync(join(d, 'main.ts'), c.main)
          await promisify(execFile)(
            'npm',
            ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, '@types/node@^20', ...c.peers],
            { cwd: d },
          )
        }),
      )
    }, 240_000)
    afterAll(() => {
      for (const d of Object.values(dirs)) rmSync(d, { recursive: true, force: true })
    })

    it.each(Object.keys(consumers))(
      '%s: compiles with the strictest library check and runs',
      (name) => {
        const c = consumers[name]!
        const d = dirs[name]!
        for (const peer of c.absent)
          expect(existsSync(join(d, 'node_modules', peer)), `${peer} must not be installed`).toBe(false)
        const tsc = spawnSync(
          process.execPath,
          [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
          { cwd: d, encoding: 'utf8' },
        )
        expect(tsc.stdout + tsc.stderr).toBe('')
        expect(tsc.status).toBe(0)
        const run = spawnSync(process.execPath, ['out/main.js'], { cwd: d, encoding: 'utf8', timeout: 30_000 })
        expect(run.stderr).toBe('')
        expect(JSON.parse(run.stdout)).toEqual(c.expected)
      },
      120_000,
    ) // a strict tsc of a project took over 30 s on the shared 2-core box
  })

  describe('the shipped examples, run in place in an app that installed the package', () => {
    // The peers and tools the examples' headers tell a user to install, at the repository's versions.
    const devDependencies = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).devDependencies as Record<
      string,
      string
    >
    const installs = ['tsx', 'fastify', '@fastify/formbody', 'express', 'ioredis', '@types/node', '@types/express'].map(
      (name) => `${name}@${devDependencies[name]}`,
    )
    const SECRET = 'examples-secret-of-at-least-32-bytes!!'
    let app: string
    beforeAll(async () => {
      // Outside the repo: `airlock-shield` can only be the installed package (its dist/), never src/.
      app = mkdtempSync(join(tmpdir(), 'airlock-examples-'))
      writeFileSync(
        join(app, 'package.json'),
        JSON.stringify({ name: 'examples-check', private: true, type: 'module' }),
      )
      await promisify(execFile)(
        'npm',
        ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, ...installs],
        { cwd: app },
      )
      // Servers for the two client examples, written as a user would, against the installed package.
      writeFileSync(
        join(app, 'pow-gate.mjs'),
        `import Fastify from 'fastify'
import { airlockShield } from 'airlock-shield/fastify'
const app = Fastify()
await app.register(airlockShield, { limit: 5, secret: '${SECRET}', queue: { challenge: true } })
app.get('/', async () => 'in')
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
console.log('gate ready')
`,
      )
      writeFileSync(
        join(app, 'lock-server.mjs'),
        `import { createLockServer } from 'airlock-shield/lock-server'
const app = createLockServer({ apiKeys: { write: process.env.AIRLOCK_KEY } })
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
console.log('lock server ready')
`,
      )
    }, 240_000)
    afterAll(() => {
      rmSync(app, { recursive: true, force: true })
    })
    const shipped = () => files.filter((f) => f.startsWith('examples/'))
    const installed = (file: string) => join('node_modules', 'airlock-shield', file)
    const run = (command: string, args: string[], env: Record<string, string> = {}) =>
      promisify(execFile)(command, args, { cwd: app, env: { ...process.env, REDIS_URL: '', ...env }, timeout: 60_000 })

    /** A server example: started as its header says, answers its first visitor with a pass, stops on SIGTERM with 0. */
    const server = (ready: RegExp) => async (file: string) => {
      const port = await freePort()
      const { child } = await startIn(
        app,
        process.execPath,
        ['--import', 'tsx', installed(file)],
        { PORT: String(port) },
        ready,
      )
      const r = await fetch(`http://127.0.0.1:${port}/`)
      expect(r.status).toBe(200)
      expect(r.headers.getSetCookie().some((c) => c.startsWith('airlock_pass='))).toBe(true)
      child.kill('SIGTERM')
      expect(await exited(child)).toBe(0)
    }
    /** A program example: runs to the end with exit 0 and prints what its header promises. */
    const program = (expected: RegExp[]) => async (file: string) => {
      const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', installed(file)])
      expect(stderr).toBe('')
      for (const line of expected) expect(stdout).toMatch(line)
    }
    const runs: Record<string, (file: string) => Promise<void>> = {
      'examples/fastify.ts': server(/Server listening at/),
      'examples/express.ts': server(/listening on/),
      'examples/waiting-room.ts': server(/waiting room demo on/),
      'examples/semaphore.ts': program([
        /skipped, previous run still going/,
        /legacy backend: 10 calls served, at most [1-3] at once/,
      ]),
      'examples/throttle.ts': program([
        /12 calls in \d+ ms, never more than 3 inside; slots held now: 0/,
        /impatient call: ERR_AIRLOCK_TIMEOUT/,
      ]),
      'examples/custom-store.ts': program([/acme got a slot: true, globex got a slot: true/]),
      'examples/pow-client.mjs': async (file) => {
        const port = await freePort()
        await startIn(app, process.execPath, ['pow-gate.mjs'], { PORT: String(port) }, /gate ready/)
        const { stdout } = await run(process.execPath, [installed(file), `http://127.0.0.1:${port}/`])
        expect(stdout.trim()).toBe('200 null') // solved the default difficulty, admitted: the route's plain-text answer
      },
      'examples/lock-client.sh': async (file) => {
        const port = await freePort()
        const env = { AIRLOCK_URL: `http://127.0.0.1:${port}`, AIRLOCK_KEY: 'examples-write-key-0123456789' }
        await startIn(app, process.execPath, ['lock-server.mjs'], { ...env, PORT: String(port) }, /lock server ready/)
        for (const count of [1, 2]) {
          const { stdout, stderr } = await run('bash', [installed(file), 'shop:42', 'inventory'], env)
          expect(stderr).toBe('')
          expect(stdout).toContain(`shop:42/inventory: count is now ${count}\n`)
        }
      },
    }

    it("ships the examples a user can run (not the repository's demo), each importing the package by name", () => {
      expect(shipped().sort()).toEqual(Object.keys(runs).sort())
      const exported = new Set(Object.keys(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).exports))
      for (const file of shipped()) {
        const text = readFileSync(join(app, installed(file)), 'utf8')
        expect(text, file).not.toMatch(/from '\.\.?\/|\bsrc\//)
        for (const [, spec] of text.matchAll(/from '(airlock-shield[^']*)'/g))
          expect(exported, `${file}: ${spec}`).toContain(
            spec === 'airlock-shield' ? '.' : `./${spec!.slice('airlock-shield/'.length)}`,
          )
      }
    })

    it.each(Object.keys(runs))(
      '%s runs against the installed package',
      async (file) => {
        await runs[file]!(file)
      },
      60_000,
    )

    it('the shipped TypeScript examples compile against the installed types (strict)', () => {
      const examples = shipped()
        .filter((f) => f.endsWith('.ts'))
        .map(installed)
      writeFileSync(
        join(app, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            noEmit: true,
            module: 'nodenext',
            moduleResolution: 'nodenext',
            target: 'es2022',
            types: ['node'],
          },
          files: examples,
        }),
      )
      const tsc = spawnSync(
        process.execPath,
        [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
        { cwd: app, encoding: 'utf8' },
      )
      expect(tsc.stdout + tsc.stderr).toBe('')
      expect(tsc.status).toBe(0)
    }, 120_000)
  })

  describe('installed with npm where no optional peer is installed', () => {
    let app: string
    beforeAll(() => {
      // Outside the repo, so neither ioredis nor fastify can be found up the tree.
      app = mkdtempSync(join(tmpdir(), 'airlock-npx-'))
      writeFileSync(join(app, 'package.json'), '{"name":"npx-check","private":true}')
      execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], {
        cwd: app,
        stdio: 'ignore',
      })
    }, 120_000)
    afterAll(() => {
      rmSync(app, { recursive: true, force: true })
    })
    const npx = (args: string[], env: Record<string, string> = {}) =>
      spawnSync('npx', ['--no-install', 'airlock', ...args], {
        cwd: app,
        encoding: 'utf8',
        env: { ...process.env, ...env },
        timeout: 60_000,
      })

    it('npx airlock --help works; the bin is executable', () => {
      expect(statSync(join(app, 'node_modules', '.bin', 'airlock')).mode & 0o111).not.toBe(0)
      const help = npx(['--help'])
      expect(help.status).toBe(0)
      expect(help.stdout).toMatch(/^Usage: airlock <command>/)
      // The package's own name is a bin too: `npx airlock-shield ...` typed outside the app folder
      // runs this package, where `npx airlock` would fetch the registry's unrelated `airlock`.
      const named = spawnSync('npx', ['--no-install', 'airlock-shield', '--help'], {
        cwd: app,
        encoding: 'utf8',
        timeout: 60_000,
      })
      expect(named.status).toBe(0)
      expect(named.stdout).toBe(help.stdout)
      expect(help.stdout).toMatch(/exec +run a command/)
      expect(npx(['exec', '--help']).stdout).toContain('--redis URL')
    })

    it('--redis without a Redis client (neither ioredis nor node-redis): exit 69 and one line saying how to add one', () => {
      const run = npx(['exec', '--name', 'x', '--redis', 'redis://127.0.0.1:6399', '--', 'true'])
      expect(run.status).toBe(69)
      expect(run.stderr).toContain(
        'airlock: --redis needs a Redis client, and neither ioredis nor redis (node-redis) is installed: npm install ioredis (or: npm install redis)\n',
      )
    })

    it('serve without fastify: exit 69 and one line saying how to add it', () => {
      const run = npx(['serve', '--port', '0'], { AIRLOCK_WRITE_KEY: 'npx-check-key-0123456789' })
      expect(run.status).toBe(69)
      expect(run.stderr).toContain(
        'airlock: serve needs the optional dependency fastify, which is not installed: npm install fastify\n',
      )
    })
  })
})
