/**
 * The proxy's `trustProxy` as a hop count (issue 42), the way Express and Fastify take a number:
 * `n` trusts the connection's peer and the `n − 1` nearest `X-Forwarded-For` entries, so the client
 * is the `n`-th entry from the right (the farthest one when the header names fewer). One policy
 * (src/base/client-address.ts) for the proxy, the decision service, the dashboard and the
 * `--trust-proxy` flag.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clientBehind, trustPolicy } from '../../src/base/client-address.js'
import { trustFlag } from '../../src/cli/args.js'
import { memoryStore } from '../../src/stores/memory.js'
import { createProxy } from '../../src/proxy.js'
import { hopOf } from '../../src/proxy/headers.js'

const SECRET = 'a-proxy-test-secret-at-least-32-bytes'
/** The chain a request carries when it passed a client (203.0.113.7) and proxies .1, .2, .3 before reaching us. */
const XFF = '203.0.113.7, 10.0.0.1, 10.0.0.2, 10.0.0.3'

describe('trustProxy: n (hops)', () => {
  it.each([
    [0, '127.0.0.1'],
    [1, '10.0.0.3'],
    [2, '10.0.0.2'],
    [3, '10.0.0.1'],
    [4, '203.0.113.7'],
    [5, '203.0.113.7'],
    [100, '203.0.113.7'],
  ])('trustProxy %i: the client is %s', (hops, client) => {
    const trusts = trustPolicy(hops)
    const hop = hopOf('127.0.0.1', false, { 'x-forwarded-for': XFF, 'x-forwarded-proto': 'https' }, trusts)
    expect(hop.client).toBe(client)
    // What the origin is told: the client, then each trusted hop after it, then the peer.
    const entries = XFF.split(', ')
    const from = entries.lastIndexOf(client)
    expect(hop.chain).toEqual(from < 0 ? ['127.0.0.1'] : [...entries.slice(from), '127.0.0.1'])
    expect(hop.proto).toBe(hops === 0 ? 'http' : 'https')
    expect(clientBehind('127.0.0.1', XFF, trusts)).toBe(client)
  })

  it('an entry that is no address ends the walk, as with a list of addresses', () => {
    expect(clientBehind('127.0.0.1', '203.0.113.7, unknown, 10.0.0.3', trustPolicy(3))).toBe('unknown')
    expect(clientBehind('127.0.0.1', '203.0.113.7, unknown, 10.0.0.3', trustPolicy(['127.0.0.1', '10.0.0.3']))).toBe(
      'unknown',
    )
  })

  it('the same policy as trustProxy: true for every count past the chain, and as false for 0', () => {
    const headers: IncomingHttpHeaders = { 'x-forwarded-for': XFF }
    expect(hopOf('127.0.0.1', false, headers, trustPolicy(9))).toEqual(
      hopOf('127.0.0.1', false, headers, trustPolicy(true)),
    )
    expect(hopOf('127.0.0.1', false, headers, trustPolicy(0))).toEqual(
      hopOf('127.0.0.1', false, headers, trustPolicy(false)),
    )
  })

  it('--trust-proxy N is a hop count; other words are still addresses', () => {
    expect(trustFlag('1')).toBe(1)
    expect(trustFlag(' 2 ')).toBe(2)
    expect(trustFlag('all')).toBe(true)
    expect(trustFlag('127.0.0.1,loopback')).toEqual(['127.0.0.1', 'loopback'])
    expect(() => trustFlag('1,2')).toThrow(/--trust-proxy: '1' is not an address/)
  })
})

describe('createProxy({ trustProxy: n }): a request through n hops is attributed to its client', () => {
  let origin: Server
  let target: string
  const proxies: Array<{ close(): Promise<void> }> = []
  beforeAll(async () => {
    // Echoes what the proxy told it of the client.
    origin = createServer((req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ realIp: req.headers['x-real-ip'], xff: req.headers['x-forwarded-for'] }))
    })
    await new Promise<void>((ok) => origin.listen(0, '127.0.0.1', ok))
    target = `http://127.0.0.1:${(origin.address() as { port: number }).port}`
  })
  afterAll(async () => {
    for (const p of proxies) await p.close()
    await new Promise((done) => origin.close(done))
  })

  async function through(trustProxy: number, xff: string): Promise<{ realIp: string; xff: string }> {
    const proxy = await createProxy({
      target,
      trustProxy,
      secret: SECRET,
      store: memoryStore(),
      logger: { warn: () => {} },
    })
    proxies.push(proxy)
    const url = await proxy.listen({ port: 0, host: '127.0.0.1' })
    const res = await fetch(`${url}/`, { headers: { 'x-forwarded-for': xff } })
    expect(res.status).toBe(200)
    return (await res.json()) as { realIp: string; xff: string }
  }

  it('2 hops (a CDN, then a load balancer on this machine): the client the CDN named', async () => {
    // The client 198.51.100.9 reached the CDN (192.0.2.1), which reached the balancer (us: 127.0.0.1).
    expect(await through(2, '6.6.6.6, 198.51.100.9, 192.0.2.1')).toEqual({
      realIp: '198.51.100.9',
      xff: '198.51.100.9, 192.0.2.1, 127.0.0.1',
    })
  })

  it("1 hop: the client the peer named; a client's own X-Forwarded-For entries are not believed", async () => {
    expect(await through(1, '6.6.6.6, 198.51.100.9')).toEqual({
      realIp: '198.51.100.9',
      xff: '198.51.100.9, 127.0.0.1',
    })
  })

  it('0 hops: the peer itself, whatever the header says', async () => {
    expect(await through(0, '198.51.100.9')).toEqual({ realIp: '127.0.0.1', xff: '127.0.0.1' })
  })
})
