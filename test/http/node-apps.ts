/**
 * The test app of any adapter of the plain Node shape, `shield(req, res, next(airlock))` (the
 * `airlock-shield/node` adapter, and one written against ARCHITECTURE.md's "A new adapter" the same
 * way): a `node:http` server with the routes of harness.ts's `startApp`, made from the adapter's
 * factory alone (harness.ts's `APPS` names it).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { GateOptions } from '../../src/gate/gate.js'
import type { AirlockHandle } from '../../src/gate/types.js'
import type { AppSetup } from './harness.js'
import { closer, type Kit, listen, work } from './web-apps.js'

/** An adapter of the Node shape: its factory takes the gate's options and `trustProxy`. */
export type NodeShape = (options: GateOptions<IncomingMessage> & { trustProxy?: boolean }) => ((
  req: IncomingMessage,
  res: ServerResponse,
  next: (airlock: AirlockHandle) => void,
) => void) & {
  close(): Promise<void>
}

/** Starts the app of the adapter `make` on a free loopback port. */
export async function startNodeShapeApp(
  make: NodeShape,
  setup: AppSetup,
  kit: Kit,
): Promise<{ url: string; close(): Promise<void> }> {
  {
    const { stats } = kit
    const site = make({ trustProxy: setup.trustProxy ?? false, ...setup.gate })
    const gates = [site]
    const own = setup.checkout ? make({ trustProxy: setup.trustProxy ?? false, ...setup.checkout }) : undefined
    if (own) gates.push(own)
    const send = (res: ServerResponse, body: string, status = 200): void => {
      res.statusCode = status
      res.setHeader('content-type', 'text/plain; charset=utf-8')
      res.end(body)
    }
    const route = async (req: IncomingMessage, res: ServerResponse, airlock: AirlockHandle): Promise<void> => {
      const url = new URL(req.url ?? '/', 'http://app')
      const ms = Number(url.searchParams.get('ms') ?? 0)
      const method = req.method === 'HEAD' ? 'GET' : req.method
      switch (`${method} ${url.pathname}`) {
        case 'GET /':
          stats.enter()
          stats.leave()
          return send(res, 'home')
        case 'GET /work':
        case 'GET /throw':
          try {
            return send(res, await work(stats, ms, url.pathname === '/throw'))
          } catch {
            return send(res, 'error', 500)
          }
        case 'GET /hang':
          stats.enter()
          await kit.hang()
          stats.leave()
          return send(res, 'late')
        case 'POST /logout':
          return send(res, `released=${await airlock.release()}`)
        case 'POST /done':
          res.setHeader('Airlock-Command', 'release')
          return send(res, 'thanks')
        case 'GET /health':
          return send(res, 'ok')
        case 'GET /kind':
          return send(res, airlock.decision?.kind ?? 'none')
        default:
          return send(res, 'not found', 404)
      }
    }
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!
      if (path === '/open') {
        stats.enter()
        stats.leave()
        return send(res, 'open')
      }
      if (own !== undefined && (path === '/checkout' || path.startsWith('/checkout/'))) {
        return own(req, res, (airlock) => {
          if (req.method === 'POST') void airlock.release().then((r) => send(res, `released=${r}`))
          else send(res, `checkout ${airlock.decision?.kind}`)
        })
      }
      site(req, res, (airlock) => void route(req, res, airlock))
    })
    return { url: await listen(server), close: closer(server, gates, kit) }
  }
}
