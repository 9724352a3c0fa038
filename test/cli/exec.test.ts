/**
 * `airlock exec` as real processes against a private redis-server: overlapping runs, crashed
 * runners, exit statuses, signal forwarding, and a lost slot (force-released, or Redis stopped).
 * The test watches the semaphore through its own Redis client.
 */
import { describe, expect, it } from 'vitest'
import { createSemaphore, type Semaphore } from '../../src/core/semaphore.js'
import { freePort, redisAvailable, requireRedis, startRedis, usePrivateRedis } from '../helpers/redis.js'
import { airlock, child } from './harness.js'

requireRedis()
let n = 0
const uniq = (label: string) => `exec-${label}-${++n}-${process.pid}`

async function waitUntil(check: () => Promise<boolean>, timeout = 15_000): Promise<void> {
  const until = Date.now() + timeout
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** Stops a process the test started (by pid), if it still runs. */
function killPid(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL')
  } catch {
    // already gone
  }
}

describe.runIf(redisAvailable)('airlock exec (real processes, private Redis)', () => {
  const server = usePrivateRedis()
  const sem = (name: string, limit = 1): Semaphore => createSemaphore({ name, limit, ttl: 60_000, store: server.store })
  const exec = (name: string, flags: string[], command: string[]) =>
    airlock(['exec', '--name', name, '--redis', server.redis.url, ...flags, '--', ...command])

  it('two overlapping runs: one runs, the other exits 75 with one line and runs nothing; a waiting one runs after', async () => {
    const name = uniq('overlap')
    const first = exec(name, [], child('hold'))
    await first.waitFor('started')
    expect(await sem(name).getState()).toMatchObject({ held: 1 })

    const second = await exec(name, [], child('exit', '0')).exited
    expect(second.code).toBe(75)
    expect(second.stdout).toBe('') // its command never started
    expect(second.stderr).toBe(`airlock: '${name}' is busy (another run holds it); not running ${process.execPath}\n`)

    const third = exec(name, ['--wait', '30s'], child('exit', '0'))
    await waitUntil(async () => (await sem(name).getState()).waiting === 1)
    expect(third.stdout()).toBe('')
    first.proc.kill('SIGTERM') // forwarded: the held command dies by SIGTERM
    const firstDone = await first.exited
    expect(firstDone.code).toBe(143)
    const thirdDone = await third.exited
    expect(thirdDone.code).toBe(0)
    expect(thirdDone.stdout).toMatch(/^started \d+\n$/)
    expect(await sem(name).getState()).toMatchObject({ held: 0, waiting: 0 })
  })

  it('--limit 2: two run at once, the third is busy', async () => {
    const name = uniq('limit')
    const a = exec(name, ['--limit', '2'], child('hold'))
    const b = exec(name, ['--limit', '2'], child('hold'))
    await Promise.all([a.waitFor('started'), b.waitFor('started')])
    const c = await exec(name, ['--limit', '2'], child('exit', '0')).exited
    expect(c.code).toBe(75)
    expect(c.stderr).toMatch(/its 2 slots are taken/)
    a.proc.kill('SIGINT') // the child exits 3 on SIGINT
    b.proc.kill('SIGINT')
    expect((await a.exited).code).toBe(3)
    expect((await b.exited).code).toBe(3)
  })

  it('a SIGKILLed runner keeps its slot until --ttl, then a waiting run gets in', async () => {
    const name = uniq('crash')
    // ttl 5 s: the busy check below must start and finish while the slot lives (at least 3.3 s after the kill).
    const runner = exec(name, ['--ttl', '5s'], child('hold'))
    const out = await runner.waitFor(/started \d+/)
    const orphan = Number(/started (\d+)/.exec(out)![1])
    try {
      runner.proc.kill('SIGKILL') // airlock dies without releasing; its command lives on unsupervised
      expect((await runner.exited).signal).toBe('SIGKILL')
      const busy = await exec(name, [], child('exit', '0')).exited
      expect(busy.code).toBe(75) // the slot outlives the crash...
      const later = await exec(name, ['--wait', '20s'], child('exit', '0')).exited
      expect(later.code).toBe(0) // ...until its ttl runs out
      expect(later.stdout).toMatch(/^started/)
    } finally {
      killPid(orphan)
    }
  })

  it('forwards the exit status, and 128+N when the command dies by signal N; the slot is released each time', async () => {
    const cases: [string[], number][] = [
      [child('exit', '7'), 7],
      [child('exit', '0'), 0],
      [child('kill-self', 'SIGKILL'), 137],
      [child('kill-self', 'SIGTERM'), 143],
    ]
    const names = cases.map(() => uniq('status'))
    const codes = await Promise.all(cases.map(async ([command], i) => (await exec(names[i]!, [], command).exited).code))
    expect(codes).toEqual(cases.map(([, code]) => code))
    for (const name of names) expect(await sem(name).getState()).toMatchObject({ held: 0 })
  })

  it('forwards SIGHUP, SIGQUIT, SIGUSR2 and SIGINT to the command, and exits with its status', async () => {
    const name = uniq('signals')
    const run = exec(name, [], child('hold'))
    await run.waitFor('started')
    for (const signal of ['SIGHUP', 'SIGQUIT', 'SIGUSR2'] as const) {
      run.proc.kill(signal)
      await run.waitFor(`got ${signal}`)
    }
    run.proc.kill('SIGINT')
    const done = await run.exited
    expect(done.code).toBe(3) // the command's own status after its SIGINT handler
    expect(done.stdout).toMatch(/got SIGHUP\ngot SIGQUIT\ngot SIGUSR2\ngot SIGINT\n$/)
    expect(done.stderr).toBe('')
    expect(await sem(name).getState()).toMatchObject({ held: 0 })
  })

  it('a signal while waiting for a slot stops the wait (128+N), leaves the line and runs nothing', async () => {
    const name = uniq('interrupt')
    const holder = exec(name, [], child('hold'))
    await holder.waitFor('started')
    const waiter = exec(name, ['--wait', 'forever'], child('exit', '0'))
    await waitUntil(async () => (await sem(name).getState()).waiting === 1)
    waiter.proc.kill('SIGINT')
    const done = await waiter.exited
    expect(done.code).toBe(130)
    expect(done.stdout).toBe('')
    expect(await sem(name).getState()).toMatchObject({ held: 1, waiting: 0 })
    holder.proc.kill('SIGTERM')
    await holder.exited
  })

  it('a force-released slot: the next refresh fails, the command gets SIGTERM, then SIGKILL after --kill-after; exit 70', async () => {
    const name = uniq('lost')
    const run = exec(name, ['--ttl', '1500ms', '--kill-after', '500ms'], child('hold', '--ignore-term'))
    await run.waitFor('started')
    expect(await sem(name).forceReleaseAll()).toBe(1)
    const done = await run.exited
    expect(done.code).toBe(70)
    expect(done.stdout).toMatch(/got SIGTERM\n$/) // it was asked first, and ignored it
    const lines = done.stderr.trim().split('\n')
    expect(lines[0]).toMatch(
      new RegExp(
        `^airlock: lost the slot of '${name}' \\(a refresh found it expired or force-released\\); stopping .* with SIGTERM$`,
      ),
    )
    expect(lines[1]).toMatch(/still running 500ms after SIGTERM; sending SIGKILL$/)
  })

  it('Redis stops while the command runs: the refresh fails, the command is stopped, exit 70', async () => {
    const own = await startRedis()
    try {
      const run = airlock([
        'exec',
        '--name',
        uniq('outage'),
        '--redis',
        own.url,
        '--ttl',
        '1500ms',
        '--',
        ...child('hold'),
      ])
      await run.waitFor('started')
      await own.kill()
      const done = await run.exited
      expect(done.code).toBe(70)
      expect(done.stderr).toMatch(/lost the slot .* \(a refresh failed: .*\); stopping .* with SIGTERM/)
    } finally {
      await own.stop()
    }
  })

  it('exits 69 with one line when Redis cannot be reached, 127 when the command does not exist', async () => {
    const port = await freePort()
    const unreachable = await airlock([
      'exec',
      '--name',
      'x',
      '--redis',
      `redis://:secret@127.0.0.1:${port}`,
      '--',
      'true',
    ]).exited
    expect(unreachable.code).toBe(69)
    expect(unreachable.stderr).toBe(
      `airlock: cannot reach Redis at redis://:***@127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}\n`,
    )
    const missing = await exec(uniq('missing'), [], ['airlock-test-no-such-command']).exited
    expect(missing.code).toBe(127)
    expect(missing.stderr).toBe('airlock: command not found: airlock-test-no-such-command (ENOENT)\n')
  })

  it('AIRLOCK_REDIS_URL stands in for --redis', async () => {
    const run = await airlock(['exec', '--name', uniq('env'), '--', ...child('exit', '5')], {
      AIRLOCK_REDIS_URL: server.redis.url,
    }).exited
    expect(run.code).toBe(5)
  })
})
