/**
 * `airlock proxy --workers N|auto`: one proxy per core, as nginx runs a worker per core. The primary
 * forks the workers (node:cluster, each worker accepting on the shared port itself), restarts one
 * that dies, and on SIGINT/SIGTERM has them finish their open requests and stop. The limit holds
 * across workers because they share one store (Redis); passes, because they share one secret.
 */
import cluster, { type Worker } from 'node:cluster'
import { availableParallelism } from 'node:os'
import type { CliIo } from './exec.js'
import { EXIT, UsageError } from './exit.js'

/** `--workers`: a count, or `auto` (one per core). */
export function workersFlag(value: string): number {
  if (value === 'auto') return availableParallelism()
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 256)
    throw new UsageError(`--workers must be a number of processes (1 to 256) or auto, got '${value}'`)
  return Number(value)
}

/** The message a worker sends its primary once it listens. */
export interface WorkerReady {
  airlockProxy: 'listening'
  url: string
}

/** Runs as the primary of `count` workers until SIGINT or SIGTERM (`describe`: the line once all listen); resolves the exit status. */
export async function runPrimary(
  count: number,
  env: NodeJS.ProcessEnv,
  describe: (url: string) => string,
  io: CliIo,
): Promise<number> {
  // Each worker accepts on the shared socket itself (no hand-off through the primary).
  cluster.schedulingPolicy = cluster.SCHED_NONE
  let stopping = false
  let announced = false
  const ready = new Set<number>()
  const fork = (): Worker => {
    const worker = cluster.fork({ ...env, AIRLOCK_WORKER: '1' })
    worker.on('message', (m: WorkerReady) => {
      if (m?.airlockProxy !== 'listening') return
      ready.add(worker.id)
      if (!announced && ready.size === count) {
        announced = true
        io.out(describe(m.url))
      }
    })
    return worker
  }
  let failed = false
  cluster.on('exit', (worker, code, signal) => {
    ready.delete(worker.id)
    if (stopping) return
    if (!announced) {
      // A worker that cannot start (a bad option, a port in use) will not start the next time either.
      failed = true
      io.err(`airlock proxy: a worker exited ${code ?? signal} before listening; stopping\n`)
      void stop()
      return
    }
    io.err(`airlock proxy: worker ${worker.process.pid} exited ${code ?? signal}; starting another\n`)
    fork()
  })
  const exited = (): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if (Object.keys(cluster.workers ?? {}).length === 0) resolve()
      }
      cluster.on('exit', check)
      check()
    })
  let resolveStop: () => void = () => {}
  const stopped = new Promise<void>((resolve) => (resolveStop = resolve))
  const stop = async (): Promise<void> => {
    if (stopping) return
    stopping = true
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM')
    await exited()
    resolveStop()
  }
  process.once('SIGINT', () => void stop())
  process.once('SIGTERM', () => void stop())
  for (let i = 0; i < count; i++) fork()
  await stopped
  return failed ? EXIT.FAILURE : EXIT.OK
}
