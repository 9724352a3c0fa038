/**
 * The published package, as a user gets it: built, `npm pack`ed, unpacked into a fresh
 * node_modules, then loaded with both `import` and `require` in separate Node processes.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from './helpers/redis.js'

requireRedis()
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
    expect(files).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts', 'dist/cli.js', 'README.md', 'LICENSE', 'package.json']))
    expect(files.some((f) => f.startsWith('src/') || f.startsWith('test/'))).toBe(false)
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
    ['ESM import', 'esm.mjs', "import { createSemaphore, redisStore, AirlockError, throttle, createLockServer } from 'airlock-shield'\nimport { Redis } from 'ioredis'"],
    [
      'CJS require',
      'cjs.cjs',
      "const { createSemaphore, redisStore, AirlockError, throttle, createLockServer } = require('airlock-shield')\nconst { Redis } = require('ioredis')\n;(async () => {",
    ],
  ])('%s works', (_label, file, load) => {
    const body = file.endsWith('.cjs') ? script(load) + '})()' : script(load)
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

  it('the airlock executable runs a command under a Redis semaphore (ioredis resolved as a peer)', () => {
    const cli = join(dir, 'node_modules', 'airlock-shield', 'dist', 'cli.js')
    expect(spawnSync(process.execPath, [cli, '--version'], { encoding: 'utf8' }).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
    if (!redis) return
    const run = spawnSync(
      process.execPath,
      [cli, 'exec', '--name', `pkg-cli-${process.pid}`, '--redis', redis.url, '--', process.execPath, '-e', 'process.exit(3)'],
      { cwd: dir, encoding: 'utf8', timeout: 30_000 },
    )
    expect(run.stderr).toBe('')
    expect(run.status).toBe(3)
  })

  describe('installed with npm where no optional peer is installed', () => {
    let app: string
    beforeAll(() => {
      // Outside the repo, so neither ioredis nor fastify can be found up the tree.
      app = mkdtempSync(join(tmpdir(), 'airlock-npx-'))
      writeFileSync(join(app, 'package.json'), '{"name":"npx-check","private":true}')
      execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], { cwd: app, stdio: 'ignore' })
    }, 120_000)
    afterAll(() => {
      rmSync(app, { recursive: true, force: true })
    })
    const npx = (args: string[], env: Record<string, string> = {}) =>
      spawnSync('npx', ['--no-install', 'airlock', ...args], { cwd: app, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000 })

    it('npx airlock --help works; the bin is executable', () => {
      expect(statSync(join(app, 'node_modules', '.bin', 'airlock')).mode & 0o111).not.toBe(0)
      const help = npx(['--help'])
      expect(help.status).toBe(0)
      expect(help.stdout).toMatch(/^Usage: airlock <command>/)
      expect(help.stdout).toMatch(/exec +run a command/)
      expect(npx(['exec', '--help']).stdout).toContain('--redis URL')
    })

    it('--redis without ioredis: exit 69 and one line saying how to add it', () => {
      const run = npx(['exec', '--name', 'x', '--redis', 'redis://127.0.0.1:6399', '--', 'true'])
      expect(run.status).toBe(69)
      expect(run.stderr).toContain('airlock: --redis needs the optional dependency ioredis, which is not installed: npm install ioredis\n')
    })

    it('serve without fastify: exit 69 and one line saying how to add it', () => {
      const run = npx(['serve', '--port', '0'], { AIRLOCK_WRITE_KEY: 'npx-check-key-0123456789' })
      expect(run.status).toBe(69)
      expect(run.stderr).toContain('airlock: serve needs the optional dependency fastify, which is not installed: npm install fastify\n')
    })
  })
})
