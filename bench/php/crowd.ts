/**
 * The crowd of bench/php.ts, its own process: CONNECTIONS connections from ADDRESSES loopback
 * addresses of their own (127.0.x.y, as many visitors behind their own IPs), cookie-less, each
 * sending its next request the moment an answer ends (a crowd that retries at once), for SECONDS
 * against URL. Prints one JSON line: answers by status, errors, requests a second.
 */
import { Client } from 'undici'

const url = new URL(process.env.URL!)
const connections = Number(process.env.CONNECTIONS ?? 500)
const addresses = Number(process.env.ADDRESSES ?? 250)
const seconds = Number(process.env.SECONDS ?? 20)
const statuses: Record<number, number> = {}
let errors = 0
const end = Date.now() + seconds * 1000
const address = (i: number): string => `127.1.${1 + Math.floor((i % addresses) / 250)}.${1 + ((i % addresses) % 250)}`

async function loop(i: number): Promise<void> {
  let client = new Client(url.origin, {
    localAddress: address(i),
    pipelining: 1,
    headersTimeout: 15_000,
    bodyTimeout: 15_000,
  })
  while (Date.now() < end) {
    try {
      const r = await client.request({
        method: 'GET',
        path: url.pathname + url.search,
        headers: { accept: 'text/html', 'user-agent': 'crowd' },
      })
      statuses[r.statusCode] = (statuses[r.statusCode] ?? 0) + 1
      await r.body.dump()
    } catch {
      errors++
      await client.destroy().catch(() => {})
      client = new Client(url.origin, {
        localAddress: address(i),
        pipelining: 1,
        headersTimeout: 15_000,
        bodyTimeout: 15_000,
      })
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  await client.destroy().catch(() => {})
}

const t0 = Date.now()
await Promise.all(Array.from({ length: connections }, (_, i) => loop(i)))
const total = Object.values(statuses).reduce((a, b) => a + b, 0)
console.log(JSON.stringify({ statuses, errors, perSecond: Math.round(total / ((Date.now() - t0) / 1000)) }))
