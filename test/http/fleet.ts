/**
 * Several gated site instances (test/fixtures/fleet-server.ts), each its own process, on one
 * private Redis: what the live-control tests steer. Collects every instance's handler events.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'
import { createInterface } from 'node:readline'

const FIXTURE = resolve(import.meta.dirname, '../fixtures/fleet-server.ts')

export interface FleetEvent {
  e: 'enter' | 'exit'
  t: number
  instance: number
}

export interface Fleet {
  urls: string[]
  events: FleetEvent[]
  stop(): Promise<void>
}

export async function startFleet(count: number, env: Record<string, string>): Promise<Fleet> {
  const procs: ChildProcess[] = []
  const events: FleetEvent[] = []
  const urls = await Promise.all(
    Array.from({ length: count }, (_, instance) => {
      const proc = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      procs.push(proc)
      let err = ''
      proc.stderr!.on('data', (d: Buffer) => (err += d.toString()))
      return new Promise<string>((ok, fail) => {
        const timer = setTimeout(() => fail(new Error(`fleet instance ${instance} did not start: ${err}`)), 20_000)
        proc.on('exit', (code) => fail(new Error(`fleet instance ${instance} exited ${code}: ${err}`)))
        createInterface({ input: proc.stdout! }).on('line', (line) => {
          const port = /^listening (\d+)$/.exec(line)
          if (port) {
            clearTimeout(timer)
            ok(`http://127.0.0.1:${port[1]}`)
          } else if (line.startsWith('{')) {
            events.push({ ...(JSON.parse(line) as Omit<FleetEvent, 'instance'>), instance })
          }
        })
      })
    }),
  )
  return {
    urls,
    events,
    async stop() {
      await Promise.all(
        procs.map(
          (p) =>
            new Promise<void>((done) => {
              if (p.exitCode !== null) return done()
              const t = setTimeout(() => p.kill('SIGKILL'), 5_000)
              p.once('exit', () => {
                clearTimeout(t)
                done()
              })
              p.kill('SIGTERM')
            }),
        ),
      )
    },
  }
}

/** Most handlers running at once across the fleet among the events from `from` on (ms). */
export function maxInFlight(events: readonly FleetEvent[], from: number, to = Infinity): number {
  const sorted = [...events].sort((a, b) => a.t - b.t || (a.e === 'exit' ? -1 : 1))
  let now = 0
  let max = 0
  for (const ev of sorted) {
    now += ev.e === 'enter' ? 1 : -1
    if (ev.t >= from && ev.t <= to) max = Math.max(max, now)
  }
  return max
}
