/**
 * `airlock auth` for the benches (bench/proxy.ts, bench/php.ts), its own process: the decision
 * service on memory at LIMIT, the line unless QUEUE=0, PASS_TTL ms. Prints `listening <port>`.
 */
import { createDecisionService } from '../../src/proxy.js'
import { memoryStore } from '../../src/index.js'

const service = await createDecisionService({
  limit: Number(process.env.LIMIT ?? 1000),
  queue: process.env.QUEUE !== '0',
  passTtl: Number(process.env.PASS_TTL ?? 600_000),
  // Visitors of a bench all come from loopback addresses nginx names; the share stays on (as
  // deployed): each visitor has an address of its own.
  secret: process.env.SECRET ?? 'proxy-bench-secret-that-is-at-least-32-bytes',
  store: memoryStore(),
  logger: { warn: () => {} },
})
console.log(`listening ${(await service.listen({ port: 0 })).split(':').at(-1)}`)
process.on('SIGTERM', () => void service.close().then(() => process.exit(0)))
