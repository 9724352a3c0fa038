/**
 * The runnable examples run as a new user runs them (`npx tsx examples/<name>.ts`, memory store, no
 * Redis): each server answers its first visitor, the library example finishes with its report.
 * `npm run demo` is the README's first command.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { freePort } from './helpers/redis.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const running: ChildProcess[] = []

afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL')
})

/** Starts `examples/<file>` with tsx; resolves with its output once `ready` matches it. */
function start(file: string, env: Record<string, string>, ready: RegExp): Promise<{ child: ChildProcess; output: () => string }> {
  const { REDIS_URL: _ignored, ...rest } = process.env
  const child = spawn(process.execPath, ['--import', 'tsx', `examples/${file}`], {
    cwd: root,
    env: { ...rest, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.push(child)
  let out = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${file} did not get ready: ${out}`)), 20_000)
    const onData = (d: Buffer): void => {
      out += d.toString()
      if (ready.test(out)) {
        clearTimeout(timer)
        resolve({ child, output: () => out })
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      if (!ready.test(out)) reject(new Error(`${file} exited with ${code}: ${out}`))
    })
  })
}

describe('examples', () => {
  it('npm run demo: the demo site admits two visitors, shows the third the busy page, and stops on SIGTERM', async () => {
    const port = await freePort()
    const { child, output } = await start('demo.ts', { PORT: String(port) }, /Ctrl-C to stop/)
    expect(output()).toContain(`http://127.0.0.1:${port}/`)
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`http://127.0.0.1:${port}/`)).status)
    expect(statuses).toEqual([200, 200, 503])
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
  })

  it.each([
    ['fastify.ts', /Server listening at/],
    ['express.ts', /listening on/],
    ['waiting-room.ts', /waiting room demo on/],
  ])('%s serves its first visitor on the memory store', async (file, ready) => {
    const port = await freePort()
    await start(file, { PORT: String(port) }, ready)
    const r = await fetch(`http://127.0.0.1:${port}/`)
    expect(r.status).toBe(200)
    expect(r.headers.getSetCookie().some((c) => c.startsWith('airlock_pass='))).toBe(true)
  })

  it('semaphore.ts runs its cron and legacy-backend recipes to the end', async () => {
    const { child, output } = await start('semaphore.ts', {}, /state now:/)
    const code = await new Promise<number | null>((resolve) => {
      if (child.exitCode !== null) resolve(child.exitCode)
      else child.once('exit', resolve)
    })
    expect(code).toBe(0)
    expect(output()).toMatch(/skipped, previous run still going/)
    expect(output()).toMatch(/legacy backend: 10 calls served, at most [1-3] at once/)
  })
})
