/**
 * Runs the files of examples/ as a user runs them: `npx tsx examples/<name>.ts` in a clone (here
 * `node --import tsx`, the same loader without npx's lookup), `npm run demo`, or (`startIn`) in an
 * app that installed the packed package. Memory store, no Redis. Every process started here is
 * killed after each test (its whole process group for npm).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterEach } from 'vitest'
import { sleep } from './wait.js'

export { listening } from './server-process.js'

export const root = fileURLToPath(new URL('../..', import.meta.url))

export interface Running {
  child: ChildProcess
  /** Everything it printed so far (stdout and stderr). */
  output: () => string
}

const running: { child: ChildProcess; group: boolean }[] = []

/** Kills what `startExample`/`startNpmScript` started and is still running; call once per test file. */
export function cleanUpExamples(): void {
  afterEach(() => {
    for (const { child, group } of running.splice(0)) {
      // npm scripts run in their own process group (detached): kill every process in it.
      try {
        if (group) process.kill(-child.pid!, 'SIGKILL')
        else if (child.exitCode === null) child.kill('SIGKILL')
      } catch {
        // already gone
      }
    }
  })
}

/** Starts `examples/<file>` with tsx; resolves once its output matches `ready`. */
export function startExample(file: string, env: Record<string, string>, ready: RegExp): Promise<Running> {
  return started(spawn(process.execPath, ['--import', 'tsx', `examples/${file}`], options(env, false)), file, ready)
}

/**
 * Starts `command args` in `cwd` (an app that installed the package, say), with the same
 * environment as the examples (no REDIS_URL unless `env` gives one); resolves once `ready`.
 * `group`: in a process group of its own, all killed after the test (for a command that starts
 * processes of its own, as `next dev` starts its server).
 */
export function startIn(
  cwd: string,
  command: string,
  args: string[],
  env: Record<string, string>,
  ready: Ready,
  group = false,
): Promise<Running> {
  return started(spawn(command, args, { ...options(env, group), cwd }), [command, ...args].join(' '), ready, group)
}

/** Resolves with the exit code once `child` has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode)
    else child.once('exit', (code) => resolve(code))
  })
}

/**
 * Starts `npm run <script>` in its own process group (so a test can check that no process of it is
 * left: `process.kill(-child.pid, 0)` throws once the group is empty); resolves once ready.
 */
export function startNpmScript(script: string, env: Record<string, string>, ready: RegExp): Promise<Running> {
  return started(spawn('npm', ['run', script], options(env, true)), `npm run ${script}`, ready, true)
}

function options(env: Record<string, string>, detached: boolean) {
  const { REDIS_URL: _ignored, ...rest } = process.env
  return {
    cwd: root,
    env: { ...rest, ...env },
    stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'],
    detached,
  }
}

/** Ready once the output matches, or (for a server that prints nothing) once the probe answers true. */
export type Ready = RegExp | (() => Promise<boolean>)

function started(child: ChildProcess, label: string, ready: Ready, group = false): Promise<Running> {
  running.push({ child, group })
  let out = ''
  let done = false
  return new Promise((resolve, reject) => {
    const settle = (error?: Error): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      if (error) reject(error)
      else resolve({ child, output: () => out })
    }
    const timer = setTimeout(() => settle(new Error(`${label} did not get ready: ${out}`)), 30_000)
    const onData = (d: Buffer): void => {
      out += d.toString()
      if (ready instanceof RegExp && ready.test(out)) settle()
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('exit', (code) => settle(new Error(`${label} exited with ${code}: ${out}`)))
    if (typeof ready === 'function') {
      void (async () => {
        while (!done) {
          if (await ready().catch(() => false)) settle()
          else await sleep(50)
        }
      })()
    }
  })
}

/** True while some process of the group `pgid` is alive. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}
