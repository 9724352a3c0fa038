/**
 * `airlock-shield/proxy`: the shield in front of any website (PHP, Rails, Django, a static shop),
 * not only Node apps: a reverse proxy on `@fastify/http-proxy` (undici underneath; optional peers
 * `fastify` and `@fastify/http-proxy`) with the gate in front of every route. `airlock proxy` is
 * the command. See docs/proxy.md.
 * @packageDocumentation
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { optionError } from '../base/errors.js'
import { prefersJson } from '../base/http.js'
import { loadPeer } from '../base/peer.js'
import { describe, knownKeys } from '../base/validate.js'
import { airlockDashboard, airlockShield, type AirlockShieldOptions } from '../fastify/plugin.js'
import { GATE_OPTION_KEYS } from '../gate/types.js'
import { escapeHtml } from '../pages/busy.js'
import { resolveStore } from '../stores/resolve.js'

type FastifyFactory = typeof import('fastify').default
type HttpProxy = typeof import('@fastify/http-proxy').default

/** Options of {@link createProxy}: where to forward, and the gate's options (all of them). */
export interface ProxyOptions extends AirlockShieldOptions {
  /** The origin: `http://127.0.0.1:8080` (its path, if any, prefixes every forwarded path). */
  target: string
  /** `false`: forward without the gate (to compare). Default `true`. */
  gated?: boolean
  /**
   * Trust `X-Forwarded-For/-Proto/-Host` from the client (Fastify's `trustProxy`: `true`, a hop
   * count, or addresses/CIDRs of your load balancer). Default `false`: they are replaced with what
   * the proxy saw. Set it only behind a proxy you run, or clients choose their own IP.
   */
  trustProxy?: boolean | string | string[]
  /** Serve the operator's dashboard at `path` (default `/airlock`) behind `token`. */
  dashboard?: { token: string; path?: string }
  /** Serve Prometheus metrics at this path (needs `prom-client`). Default: none. */
  metricsPath?: string
  /** Largest request body forwarded, bytes. Default 1 GiB (bodies stream; nothing is buffered whole). */
  bodyLimit?: number
}

const PROXY_KEYS = ['target', 'gated', 'trustProxy', 'dashboard', 'metricsPath', 'bodyLimit', 'global'] as const

/** The small page answered when the origin does not answer (`502`), and its JSON twin. */
export function badGatewayPage(): string {
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">' +
    '<title>Site unavailable</title><style>body{font:17px/1.5 system-ui,sans-serif;display:grid;place-items:center;min-height:100vh;margin:0}' +
    'main{max-width:30em;text-align:center}</style></head><body><main><h1>The site is not answering</h1>' +
    `<p>${escapeHtml('Its server did not respond. Please try again in a minute.')}</p></main></body></html>`
  )
}

/**
 * Creates the proxy (not listening yet: `await app.listen({ port, host })`). Validates every option
 * now (`ERR_AIRLOCK_OPTION`); `ERR_AIRLOCK_PEER_MISSING` when fastify or @fastify/http-proxy is not
 * installed.
 */
export async function createProxy(options: ProxyOptions): Promise<FastifyInstance> {
  if (options === null || typeof options !== 'object') optionError(`createProxy() needs an options object with a target, got ${describe(options)}`)
  knownKeys('createProxy()', options, [...GATE_OPTION_KEYS, ...PROXY_KEYS])
  const { target, gated = true, trustProxy = false, dashboard, metricsPath, bodyLimit = 2 ** 30, ...gateOptions } = options
  let upstream: URL
  try {
    upstream = new URL(target)
  } catch {
    upstream = new URL('invalid:')
  }
  if (upstream.protocol !== 'http:' && upstream.protocol !== 'https:') {
    optionError(`target must be an http:// or https:// URL (http://127.0.0.1:8080), got ${describe(target)}`)
  }
  if (typeof gated !== 'boolean') optionError(`gated must be a boolean, got ${describe(gated)}`)
  if (dashboard !== undefined && (typeof dashboard !== 'object' || dashboard === null)) optionError(`dashboard must be { token, path? }, got ${describe(dashboard)}`)
  const fastify = loadPeer<FastifyFactory | { default: FastifyFactory }>('fastify', 'createProxy()')
  const httpProxy = loadPeer<HttpProxy | { default: HttpProxy }>('@fastify/http-proxy', 'createProxy()')
  const Fastify = 'default' in fastify ? fastify.default : fastify
  const app = Fastify({ trustProxy, bodyLimit, forceCloseConnections: 'idle', return503OnClosing: true }) as unknown as FastifyInstance
  const store = resolveStore(gateOptions.store)
  if (gated) await app.register(airlockShield, { ...gateOptions, store })
  if (dashboard !== undefined) {
    await app.register(airlockDashboard, { prefix: dashboard.path ?? '/airlock', token: dashboard.token, store, names: [gateOptions.name ?? 'default'] })
  }
  if (metricsPath !== undefined) await mountMetrics(app, metricsPath)
  // (reply-from's handler types are written for any raw server; ours is node:http's.)
  const proxyPlugin = ('default' in httpProxy ? httpProxy.default : httpProxy) as unknown as Parameters<FastifyInstance['register']>[0]
  await app.register(proxyPlugin, {
    upstream: upstream.origin,
    rewritePrefix: upstream.pathname === '/' ? '' : upstream.pathname.replace(/\/$/, ''),
    websocket: true,
    replyOptions: {
      rewriteRequestHeaders: (request: FastifyRequest, headers: Record<string, string | string[] | undefined>) => forwarded(request, headers, trustProxy !== false),
      onError: (reply: FastifyReply, { error }: { error: Error }): void => {
        reply.log.warn({ err: error }, 'airlock proxy: the origin did not answer')
        const json = prefersJson(reply.request.headers.accept)
        void reply
          .code(502)
          .header('cache-control', 'no-store')
          .type(json ? 'application/json' : 'text/html; charset=utf-8')
          .send(json ? '{"status":"bad-gateway","message":"the site did not answer"}' : badGatewayPage())
      },
    },
  })
  return app
}

/** X-Forwarded-For/-Proto/-Host: appended to what trusted hops sent, else replacing what the client sent. */
function forwarded(request: FastifyRequest, headers: Record<string, string | string[] | undefined>, trusted: boolean): Record<string, string | string[] | undefined> {
  const remote = request.raw.socket.remoteAddress ?? ''
  const prior = trusted ? headers['x-forwarded-for'] : undefined
  return {
    ...headers,
    'x-forwarded-for': prior ? `${String(prior)}, ${remote}` : remote,
    'x-forwarded-proto': request.protocol,
    'x-forwarded-host': (trusted && (headers['x-forwarded-host'] as string | undefined)) || (request.headers.host ?? ''),
  }
}

async function mountMetrics(app: FastifyInstance, path: string): Promise<void> {
  const prom = loadPeer<typeof import('prom-client')>('prom-client', 'the proxy metricsPath option')
  const { airlockMetrics } = await import('../prometheus/metrics.js')
  const registry = new prom.Registry()
  const metrics = airlockMetrics({ registry })
  app.addHook('onClose', async () => metrics.stop())
  app.get(path, { config: { airlock: false } }, async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()))
}
