/**
 * The published package, as a user gets it: built, `npm pack`ed, unpacked into a fresh
 * node_modules, then loaded with both `import` and `require` in separate Node processes.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from './helpers/redis.js'

requireRedis()
const root = resolve(import.meta.dirname, '..')

describe('packed package', () => {
  let dir: string
  let redis: PrivateRedis | undefined
  let files: string[]

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
    expect(files).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts', 'README.md', 'LICENSE', 'package.json']))
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
console.log(JSON.stringify({ first: lease !== null, second: second === null, redisResult, code }))
`

  it.each([
    ['ESM import', 'esm.mjs', "import { createSemaphore, redisStore, AirlockError } from 'airlock-shield'\nimport { Redis } from 'ioredis'"],
    [
      'CJS require',
      'cjs.cjs',
      "const { createSemaphore, redisStore, AirlockError } = require('airlock-shield')\nconst { Redis } = require('ioredis')\n;(async () => {",
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
    })
  })
})
