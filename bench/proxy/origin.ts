/**
 * The origin of bench/proxy.ts, its own process: `GET /` answers 1 KB; `GET /fragile` waits 20 ms
 * and answers 500 when more than CAPACITY (50) are in flight; `GET /stats` reports the 500s.
 * Prints `listening <port>`.
 */
import { createServer } from 'node:http'

const CAPACITY = Number(process.env.CAPACITY ?? 50)
const body = 'x'.repeat(1024)
let inFlight = 0
let failures = 0
let served = 0
const server = createServer((req, res) => {
  if (req.url === '/stats') return void res.end(JSON.stringify({ failures, served }))
  if (req.url === '/fragile') {
    inFlight++
    const over = inFlight > CAPACITY
    setTimeout(() => {
      inFlight--
      served++
      if (over) failures++
      res.statusCode = over ? 500 : 200
      res.end(over ? 'overloaded' : body)
    }, 20)
    return
  }
  res.setHeader('content-type', 'text/plain')
  res.end(body)
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => console.log(`listening ${(server.address() as { port: number }).port}`))
process.on('SIGTERM', () => process.exit(0))
