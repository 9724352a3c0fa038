/**
 * What the private servers of the tests (nginx, PHP-FPM, Caddy) share: a spawned server that goes
 * with the test's process whatever happens, is ready when `ready()` says so (for a port: {@link listening}) (failing with its
 * stderr if it exits first), and stops on SIGTERM.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { connect } from 'node:net'
import { until } from './wait.js'

export interface ServerProcess {
  proc: ChildProcess
  stop(): Promise<void>
}

/** Spawns `command`, resolves once `ready()` is true (10 s at most by default). */
export async function startServerProcess(
  command: string,
  args: string[],
  ready: () => boolean | Promise<boolean>,
  options: SpawnOptions & { timeout?: number } = {},
): Promise<ServerProcess> {
  const proc = spawn(command, args, { ...options, stdio: ['ignore', 'ignore', 'pipe'] })
  // Whatever happens to the test, the server goes with its process.
  const onExit = (): void => void proc.kill('SIGTERM')
  process.once('exit', onExit)
  let stderr = ''
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  await until(
    async () => {
      if (proc.exitCode !== null) throw new Error(`${command} exited ${proc.exitCode}: ${stderr.slice(-2000)}`)
      return ready()
    },
    options.timeout ?? 10_000,
    50,
  )
  return {
    proc,
    stop: () =>
      new Promise((done) => {
        process.removeListener('exit', onExit)
        if (proc.exitCode !== null || proc.signalCode !== null) return done()
        proc.once('exit', () => done())
        proc.kill('SIGTERM')
      }),
  }
}

/** True while something accepts connections on 127.0.0.1:`port` (a request would be one more visitor of a site). */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => {
      s.destroy()
      resolve(true)
    })
    s.on('error', () => resolve(false))
  })
}
