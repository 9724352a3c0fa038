/**
 * The fragile backend of bench/adaptive.ts, its own process (a database the gates share). `GET
 * /work` takes WORK_MS while at most C requests are inside; above C it depends on KIND:
 *
 * - `slow-failure`: every extra request inside adds a quarter of WORK_MS to a new request's time
 *   (the database slows down); one that would take over 3 x WORK_MS fails with 500 after 3 x WORK_MS.
 * - `hard-cliff`: a request that would be the (C+1)th inside fails at once with 500 (a pool that
 *   throws, a database that refuses connections). No slowdown before.
 * - `gradual`: a request arriving with n > C inside takes WORK_MS x n / C (the work is shared: the
 *   latency grows, the throughput stays C per WORK_MS); one that would take over 10 x WORK_MS fails
 *   with 500 after 10 x WORK_MS.
 *
 * C follows PHASES (comma-separated capacities, PHASE_S seconds each) from `POST /start`. `GET
 * /stats` answers the most requests that were inside at once since the last `/stats`. Prints
 * `listening <port>`.
 */
import { createServer } from 'node:http'

const WORK = Number(process.env.WORK_MS ?? 50)
const KIND = process.env.KIND ?? 'slow-failure'
const PHASES = (process.env.PHASES ?? '30,10,40').split(',').map(Number)
const PHASE_MS = Number(process.env.PHASE_S ?? 12) * 1000
if (!['slow-failure', 'hard-cliff', 'gradual'].includes(KIND)) throw new Error(`KIND: unknown backend ${KIND}`)
let started = 0
let inside = 0
let peak = 0

const capacity = (): number =>
  started === 0 ? PHASES[0]! : PHASES[Math.min(PHASES.length - 1, Math.floor((Date.now() - started) / PHASE_MS))]!

/** The time a request arriving now takes (ms), and whether it fails. */
function work(n: number, c: number): { ms: number; fails: boolean } {
  if (KIND === 'hard-cliff') return n > c ? { ms: 0, fails: true } : { ms: WORK, fails: false }
  const [time, timeout] =
    KIND === 'gradual' ? [(WORK * Math.max(c, n)) / c, 10 * WORK] : [WORK * (1 + Math.max(0, n - c) / 4), 3 * WORK]
  return time > timeout ? { ms: timeout, fails: true } : { ms: time, fails: false }
}

const server = createServer((req, res) => {
  if (req.method === 'POST') {
    started = Date.now()
    res.end(String(started))
    return
  }
  if (req.url === '/stats') {
    res.end(JSON.stringify({ peak }))
    peak = inside
    return
  }
  const { ms, fails } = work(inside + 1, capacity())
  if (ms === 0) {
    res.statusCode = 500
    res.end('refused')
    return
  }
  inside++
  peak = Math.max(peak, inside)
  setTimeout(() => {
    inside--
    res.statusCode = fails ? 500 : 200
    res.end(fails ? 'timeout' : 'ok')
  }, ms)
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => console.log(`listening ${(server.address() as { port: number }).port}`))
process.on('SIGTERM', () => process.exit(0))
