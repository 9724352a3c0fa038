/**
 * The operator's dashboard as a Fastify plugin (entry `airlock-shield/fastify`): its routes opt out
 * of every gate and read their own bodies; the dashboard itself is src/dashboard/server.ts.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingMessage } from 'node:http'
import { createDashboard, redactToken, type DashboardOptions } from '../dashboard/server.js'

/**
 * The operator's dashboard as a Fastify plugin (docs/dashboard.md):
 * `app.register(airlockDashboard, { prefix: '/airlock', token, store, names: ['shop'] })`. Its routes
 * opt out of every gate (`config: { airlock: false }`), so the operator is never turned away.
 */
export const airlockDashboard: FastifyPluginAsync<DashboardOptions> = async (fastify, options) => {
  const { prefix: _p, logLevel: _l, ...rest } = options as DashboardOptions & { prefix?: unknown; logLevel?: unknown }
  const dashboard = createDashboard({ logger: fastify.log, ...rest })
  fastify.addHook('onClose', async () => dashboard.close())
  // The dashboard reads its own bodies (src/base/body.ts: 4 KB at most, within 10 s).
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('*', (_request, _payload, done) => done(null))
  const handler = (request: FastifyRequest, reply: FastifyReply): void => {
    reply.hijack()
    const raw = request.raw as IncomingMessage & { originalUrl?: string }
    raw.originalUrl = request.url
    raw.url = request.url.slice(fastify.prefix.length) || '/'
    dashboard.handle(raw, reply.raw, request.ip)
  }
  // Fastify logs "incoming request" before any hook runs: the routes' own serializer leaves a
  // `?token=` link's token out of it.
  const logSerializers = {
    req: (request: FastifyRequest) => ({
      method: request.method,
      url: redactToken(request.url),
      host: request.host,
      remoteAddress: request.ip,
      remotePort: request.socket?.remotePort,
    }),
  }
  for (const url of ['/', '/*'])
    fastify.route({ method: ['GET', 'POST'], url, config: { airlock: false }, logSerializers, handler })
}
