/**
 * The runnable examples run as a new user runs them in a clone (`npx tsx examples/<name>.ts`, memory
 * store, no Redis): each server answers its first visitor, the library example finishes with its
 * report. They import `airlock-shield` as an app does; here that name means src/. (Where a user
 * installed the package, the shipped ones run against dist/: test/package.test.ts.)
 * `npm run demo` is the first command of the README's part for the repository: started through
 * npm, and stopped by a signal to the npm process, as a terminal, a process manager or a container
 * runtime stops it.
 */
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { ENTRIES } from '../tsup.config.js'
import {
  cleanUpExamples,
  exited,
  groupAlive,
  listening,
  root,
  startExample,
  startNpmScript,
} from './helpers/examples.js'
import { freePort } from './helpers/redis.js'
import { until } from './helpers/wait.js'

cleanUpExamples()

describe('examples', () => {
  it('import the package by its name, which in the repository means src/ (tsconfig.json "paths", one per tsup entry), for tsx and tsc alike', () => {
    const specifier = (entry: string): string => (entry === 'index' ? 'airlock-shield' : `airlock-shield/${entry}`)
    const expected = Object.fromEntries(
      Object.entries(ENTRIES).map(([entry, file]) => [specifier(entry), [`./${file}`]]),
    )
    const read = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8'))
    expect(read('tsconfig.json').compilerOptions.paths).toEqual(expected)
    const exported = Object.keys(read('package.json').exports).filter((k) => k !== './package.json')
    expect(exported.map((k) => specifier(k === '.' ? 'index' : k.slice(2))).sort()).toEqual(
      Object.keys(expected).sort(),
    )
    // As `npx tsx examples/<file>` and `npm run demo` load them (not dist/, which the package's self-reference would give).
    const names = JSON.stringify(Object.keys(expected))
    const run = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `console.log(JSON.stringify(${names}.map((s) => import.meta.resolve(s))))`,
      ],
      {
        cwd: root,
        encoding: 'utf8',
      },
    )
    expect(run.stderr).toBe('')
    expect(JSON.parse(run.stdout)).toEqual(
      Object.values(expected).map(([file]) => pathToFileURL(join(root, file!)).href),
    )
    for (const file of readdirSync(join(root, 'examples')).filter((f) => /\.(ts|mjs)$/.test(f))) {
      expect(readFileSync(join(root, 'examples', file), 'utf8'), file).not.toMatch(/from '\.\.?\//)
    }
  })

  it('npm run demo: the demo site admits two visitors and shows the third the busy page', async () => {
    const port = await freePort()
    const { output } = await startExample('demo.ts', { PORT: String(port) }, /Ctrl-C to stop/)
    expect(output()).toContain(`http://127.0.0.1:${port}/`)
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`http://127.0.0.1:${port}/`)).status)
    expect(statuses).toEqual([200, 200, 503])
  })

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'npm run demo stops on %s to the npm process: the port is freed and no process is left',
    async (signal) => {
      const port = await freePort()
      const { child, output } = await startNpmScript('demo', { PORT: String(port) }, /Ctrl-C to stop/)
      expect(await listening(port)).toBe(true)
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
      child.kill(signal)
      await until(async () => !(await listening(port)), 10_000, 50)
      expect(await exited).toBe(0)
      await until(() => !groupAlive(child.pid!), 10_000, 50)
      expect(output()).toContain('stopping...')
    },
    60_000,
  )

  it.each([
    ['fastify.ts', /Server listening at/],
    ['express.ts', /listening on/],
    ['waiting-room.ts', /waiting room demo on/],
  ])('%s serves its first visitor on the memory store', async (file, ready) => {
    const port = await freePort()
    await startExample(file, { PORT: String(port) }, ready)
    const r = await fetch(`http://127.0.0.1:${port}/`)
    expect(r.status).toBe(200)
    expect(r.headers.getSetCookie().some((c) => c.startsWith('airlock_pass='))).toBe(true)
  })

  it('semaphore.ts runs its cron and legacy-backend recipes to the end', async () => {
    const { child, output } = await startExample('semaphore.ts', {}, /state now:/)
    expect(await exited(child)).toBe(0)
    expect(output()).toMatch(/skipped, previous run still going/)
    expect(output()).toMatch(/legacy backend: 10 calls served, at most [1-3] at once/)
  })
})
