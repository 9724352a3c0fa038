/**
 * The Node proxies airlock proxy is measured against (bench/proxy.ts), its own process. PEER:
 * - `floor`: the least a Node proxy can do, node:http + undici's Pool, written here (no gate, no
 *   header rules but hop-by-hop ones): the floor of a Node proxy.
 * - `fastify-http-proxy`: @fastify/http-proxy as its README sets it up (`upstream`, prefix `/`).
 * - `http-proxy`: node-http-proxy as its README sets it up (`createProxyServer({ target })`, an
 *   agent with keep-alive so it is not measured opening connections).
 * - `503`: a bare node:http 503 (the cheapest refusal Node can send), to set refusals against.
 * Prints `listening <port>`.
 */
import { Agent, createServer, type IncomingHttpHeaders } from 'node:http'
import Fastify from 'fastify'
import fastifyHttpProxy from '@fastify/http-proxy'
import httpProxy from 'http-proxy'
import { Pool } from 'undici'

const target = process.env.TARGET!
const peer = process.env.PEER ?? 'floor'
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer'])
const strip = (
  headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
): Record<string, string | string[]> => {
  const out: Record<string, string | string[]> = {}
  for (const k in headers) if (!HOP.has(k) && headers[k] !== undefined) out[k] = headers[k]!
  return out
}
let port: number
if (peer === '503') {
  // The cheapest refusal Node can send: a bare node:http 503 with a small page and Retry-After.
  const page = '<!doctype html><title>Busy</title><p>Lots of visitors right now: this page tries again in 5 s.</p>'
  const server = createServer((_req, res) => {
    res.writeHead(503, { 'content-type': 'text/html; charset=utf-8', 'retry-after': '5', 'cache-control': 'no-store' })
    res.end(page)
  })
  server.keepAliveTimeout = 65_000
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  port = (server.address() as { port: number }).port
} else if (peer === 'floor') {
  const pool = new Pool(target, { connections: 128 })
  const server = createServer((req, res) => {
    const { host: _host, ...headers } = strip(req.headers)
    pool
      .request({
        method: req.method as 'GET',
        path: req.url ?? '/',
        headers,
        body: req.method === 'GET' || req.method === 'HEAD' ? null : req,
      })
      .then(
        ({ statusCode, headers: h, body }) => {
          res.writeHead(statusCode, strip(h))
          body.pipe(res)
        },
        () => {
          res.writeHead(502)
          res.end()
        },
      )
  })
  server.keepAliveTimeout = 65_000
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  port = (server.address() as { port: number }).port
} else if (peer === 'fastify-http-proxy') {
  const app = Fastify()
  await app.register(fastifyHttpProxy, { upstream: target })
  await app.listen({ port: 0, host: '127.0.0.1' })
  port = (app.server.address() as { port: number }).port
} else {
  const proxy = httpProxy.createProxyServer({ target, agent: new Agent({ keepAlive: true, maxSockets: 128 }) })
  proxy.on('error', (_err, _req, res) => {
    if ('writeHead' in res && !res.headersSent) res.writeHead(502)
    res.end()
  })
  const server = createServer((req, res) => proxy.web(req, res))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  port = (server.address() as { port: number }).port
}
console.log(`listening ${port}`)
process.on('SIGTERM', () => process.exit(0))
