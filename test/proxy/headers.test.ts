/** The proxy's header rules, as pure functions (the end-to-end cases are in production.test.ts). */
import { describe, expect, it } from 'vitest'
import { trustPolicy } from '../../src/base/client-address.js'
import {
  hopOf,
  requestHeaders as requestList,
  responseHeaderList,
  upgradeHeaders as upgradeList,
  withoutCookie,
} from '../../src/proxy/headers.js'

/** The functions take and give flat lists (`rawHeaders`); the tests read objects. */
const flat = (o: Record<string, string>): string[] => Object.entries(o).flat()
const object = (list: string[]): Record<string, string> => {
  const o: Record<string, string> = {}
  for (let i = 0; i < list.length; i += 2) o[list[i]!] = list[i + 1]!
  return o
}
const requestHeaders = (
  h: Record<string, string>,
  hop: Parameters<typeof requestList>[1],
  rules: Parameters<typeof requestList>[2],
) => object(requestList(flat(h), hop, rules))

const hop = { client: '203.0.113.7', chain: ['203.0.113.7'], proto: 'http', host: 'shop.example' }
const plain = { passCookie: 'airlock_pass' }
const balancer = trustPolicy(['10.0.0.0/8'])

describe('requestHeaders', () => {
  it('keeps repeated headers and the names as the client wrote them', () => {
    expect(
      requestList(['X-Tag', 'a', 'X-Tag', 'b', 'Cookie', 'a=1', 'Cookie', 'airlock_pass=z'], hop, plain).slice(0, 6),
    ).toEqual(['X-Tag', 'a', 'X-Tag', 'b', 'Cookie', 'a=1'])
  })

  it('drops hop-by-hop headers, those Connection lists, Expect, and the client forwarding claims', () => {
    const out = requestHeaders(
      {
        connection: 'keep-alive, X-Trace',
        'x-trace': '1',
        'keep-alive': 'timeout=5',
        te: 'trailers',
        trailer: 'x',
        'transfer-encoding': 'chunked',
        upgrade: 'h2c',
        'proxy-authorization': 'Basic eA==',
        'proxy-connection': 'keep-alive',
        expect: '100-continue',
        'x-real-ip': '6.6.6.6',
        forwarded: 'for=6.6.6.6',
        'x-forwarded-for': '6.6.6.6',
        accept: 'text/html',
      },
      hop,
      plain,
    )
    expect(out).toEqual({
      accept: 'text/html',
      'x-forwarded-for': '203.0.113.7',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'shop.example',
      'x-real-ip': '203.0.113.7',
      forwarded: 'for=203.0.113.7;host=shop.example;proto=http',
    })
  })

  it('drops every client-address, scheme and path header only a proxy writes (issue 38: PHP reads HTTP_CLIENT_IP first)', () => {
    const claims = {
      'Client-IP': '6.6.6.6',
      'True-Client-IP': '6.6.6.6',
      'X-Client-IP': '6.6.6.6',
      'CF-Connecting-IP': '6.6.6.6',
      'X-Cluster-Client-IP': '6.6.6.6',
      'Fastly-Client-IP': '6.6.6.6',
      'X-Forwarded-Port': '443',
      'X-Forwarded-Ssl': 'on',
      'X-Original-URL': '/admin',
      'X-Rewrite-URL': '/admin',
      'X-Forwarded-Prefix': '/x',
    }
    const out = requestHeaders({ ...claims, accept: 'text/html' }, hop, plain)
    for (const name of Object.keys(claims)) expect(out, name).not.toHaveProperty(name)
    expect(out['x-real-ip']).toBe('203.0.113.7')
  })

  it("behind a trusted balancer: the proxy's own headers name the client the balancer saw, whatever the visitor wrote (issue 38)", () => {
    // nginx appends the visitor's address to what the visitor sent: the visitor wrote the first entry.
    for (const spoof of ['1.1.1.1', '9.9.9.9, 8.8.8.8', 'garbage']) {
      const h = hopOf(
        '10.0.0.2',
        false,
        { 'x-forwarded-for': `${spoof}, 198.51.100.1`, 'x-forwarded-proto': 'http, https', host: 'shop.example' },
        balancer,
      )
      expect(h).toEqual({
        client: '198.51.100.1',
        chain: ['198.51.100.1', '10.0.0.2'],
        proto: 'https',
        host: 'shop.example',
      })
      const out = requestHeaders(
        {
          'x-forwarded-for': `${spoof}, 198.51.100.1`,
          'x-real-ip': spoof,
          forwarded: `for=${spoof}`,
          'x-forwarded-host': 'evil.example',
        },
        h,
        plain,
      )
      expect(out).toMatchObject({
        'x-forwarded-for': '198.51.100.1, 10.0.0.2',
        'x-real-ip': '198.51.100.1',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'shop.example',
        forwarded: 'for=198.51.100.1;host=shop.example;proto=https',
      })
    }
    // Several trusted hops: read from the right past each of them.
    expect(
      hopOf('10.0.0.2', false, { 'x-forwarded-for': '6.6.6.6, 198.51.100.1:4711, 10.1.2.3' }, balancer).client,
    ).toBe('198.51.100.1')
    // A peer not on the list: its claims count for nothing.
    expect(
      hopOf('192.0.2.50', false, { 'x-forwarded-for': '198.51.100.1', 'x-forwarded-proto': 'https' }, balancer),
    ).toMatchObject({ client: '192.0.2.50', chain: ['192.0.2.50'], proto: 'http' })
  })

  it('quotes an IPv6 client in Forwarded (RFC 7239), unwraps an IPv4-mapped one, quotes a host with a port', () => {
    expect(requestHeaders({}, { ...hop, client: '2001:db8::1' }, plain).forwarded).toBe(
      'for="[2001:db8::1]";host=shop.example;proto=http',
    )
    expect(requestHeaders({}, { ...hop, client: '::ffff:192.0.2.9' }, plain).forwarded).toBe(
      'for=192.0.2.9;host=shop.example;proto=http',
    )
    expect(requestHeaders({}, { ...hop, host: 'shop.example:8080' }, plain).forwarded).toBe(
      'for=203.0.113.7;host="shop.example:8080";proto=http',
    )
  })

  it('takes the pass cookie out of Cookie, and Cookie out when nothing else is left', () => {
    expect(requestHeaders({ cookie: 'a=1; airlock_pass=xyz; b=2' }, hop, plain).cookie).toBe('a=1; b=2')
    expect(requestHeaders({ cookie: 'airlock_pass=xyz' }, hop, plain).cookie).toBeUndefined()
    expect(requestHeaders({ cookie: 'airlock_pass=xyz' }, hop, { ...plain, passCookie: undefined }).cookie).toBe(
      'airlock_pass=xyz',
    )
    expect(withoutCookie('my_airlock_pass=1; airlock_pass=2', 'airlock_pass')).toBe('my_airlock_pass=1')
  })

  it('an upgrade keeps Upgrade and says Connection: upgrade', () => {
    expect(
      object(
        upgradeList(
          flat({ upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-key': 'k' }),
          hop,
          plain,
          'websocket',
        ),
      ),
    ).toMatchObject({ upgrade: 'websocket', connection: 'upgrade', 'sec-websocket-key': 'k' })
  })
})

describe('responseHeaderList', () => {
  it('drops hop-by-hop headers and those Connection lists; takes Airlock-Command for the proxy', () => {
    const raw = [
      'connection',
      'close, x-internal',
      'x-internal',
      '1',
      'keep-alive',
      'timeout=5',
      'transfer-encoding',
      'chunked',
      'proxy-authenticate',
      'Basic',
      'airlock-command',
      ' Release ',
      'set-cookie',
      'a=1',
      'set-cookie',
      'b=2',
      'content-type',
      'text/html',
    ]
    expect(responseHeaderList(raw)).toEqual({
      list: ['set-cookie', 'a=1', 'set-cookie', 'b=2', 'content-type', 'text/html'],
      command: 'release',
    })
  })

  it('the raw list keeps names as the origin wrote them and every Set-Cookie', () => {
    const raw = [
      'Connection',
      'close, X-Internal',
      'X-Internal',
      '1',
      'Set-Cookie',
      'a=1',
      'Set-Cookie',
      'b=2',
      'Airlock-Command',
      'release',
      'Content-Type',
      'text/html',
    ].map((x) => Buffer.from(x))
    expect(responseHeaderList(raw)).toEqual({
      list: ['Set-Cookie', 'a=1', 'Set-Cookie', 'b=2', 'Content-Type', 'text/html'],
      command: 'release',
    })
  })
})
