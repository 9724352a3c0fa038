/**
 * The fragile backend of bench/adaptive.ts, its own process (a database the gates share): `GET
 * /work` takes WORK_MS while at most C requests are in flight; above C every extra request in
 * flight adds a quarter of WORK_MS to a new request's time (the database slows down), and a request
 * that would take longer than TIMEOUT_MS (3 x WORK_MS) fails with 500 after TIMEOUT_MS (it timed
 * out). C follows PHASES (comma-separated capacities, PHASE_S seconds each) from `POST /start`.
 * Prints `listening <port>`.
 */
import { createServer } from 'node:http'

const WORK = Number(process.env.WORK_MS ?? 50)
const TIMEOUT = 3 * WORK
const PHASES = (process.env.PHASES ?? '40,15,60').split(',').map(Number)
const PHASE_MS = Number(process.env.PHASE_S ?? 20) * 1000
let started = 0
let inFlight = 0

const capacity = (): number => PHASES[Math.min(PHASES.length - 1, Math.floor((Date.now() - started) / PHASE_MS))]!
const server = createServer((req, res) => {
  if (req.method === 'POST') {
    started = Date.now()
    res.end(String(started))
    return
  }
  inFlight++
  const c = started === 0 ? PHASES[0]! : capacity()
  const time = WORK * (1 + Math.max(0, inFlight - c) / 4)
  const fails = time > TIMEOUT
  setTimeout(
    () => {
      inFlight--
      res.statusCode = fails ? 500 : 200
      res.end(fails ? 'timeout' : 'ok')
    },
    fails ? TIMEOUT : time,
  )
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => console.log(`listening ${(server.address() as { port: number }).port}`))
process.on('SIGTERM', () => process.exit(0))
