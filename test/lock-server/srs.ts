/**
 * The Small Resource Server's protocol, as its PHP client (sebk69's small-swoole-resource-client-bundle)
 * speaks it: the exchange of the client's quick start, recorded request by request, against the
 * service with its defaults (the read envelope), over real HTTP; and the ticket header's case on the
 * wire (that client reads `X-Ticket` case-sensitively).
 */
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KEYS, startService, uniqueName, type Service } from './harness.js'
import type { StoreSetup } from './behaviour.js'

/** The raw header lines of an answer, as sent on the wire. */
function rawHeaders(url: string, request: string): Promise<string[]> {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    let data = ''
    const s = connect(Number(u.port), u.hostname, () => s.write(request))
    s.on('data', (c) => (data += c.toString('latin1')))
    s.on('close', () => resolve(data.split('\r\n\r\n')[0]!.split('\r\n')))
    s.on('error', reject)
  })
}

export function srsExchange(label: string, makeStore: () => Promise<StoreSetup>): void {
  describe(`the Small Resource Server's client exchange on ${label}`, () => {
    let setup: StoreSetup
    let svc: Service
    beforeAll(async () => {
      setup = await makeStore()
      svc = await startService({ store: setup.store, dataFormat: undefined }) // the default: the envelope
    })
    afterAll(async () => {
      await svc?.close()
      await setup?.close()
    })
    // The client's factory sends these on every request.
    const headers = { accept: 'application/json' }

    it("replays the client's quick start: create, A locks and reads, B waits, A writes and unlocks, B reads A's data, a fresh client locks and unlocks", async () => {
      const name = uniqueName('printer')
      const at = `/resource/${name}/queue`
      expect((await svc.call('POST', '/resource', { headers, json: { name, timeout: 30 } })).status).toBe(201)

      // A: lockData() then getData(lock: true) with its ticket.
      const aLock = await svc.call('PUT', `${at}/lock`, { headers, key: KEYS.readLock })
      expect([aLock.status, aLock.body]).toEqual([200, { locked: true }])
      const a = aLock.headers.get('x-ticket')!
      const aRead = await svc.call('GET', `${at}?lock=1`, { headers, key: KEYS.readLock, ticket: a })
      expect([aRead.status, aRead.body]).toEqual([200, { resource: name, selector: 'queue', data: 'null' }])
      expect(aRead.headers.get('x-ticket')).toBe(a)

      // B: lockData() is false and gives B a ticket; getData(lock: true) with it is a 202 (EmptyDataException).
      const bLock = await svc.call('PUT', `${at}/lock`, { headers, key: KEYS.readLock })
      expect([bLock.status, bLock.body]).toEqual([200, { locked: false }])
      const b = bLock.headers.get('x-ticket')!
      expect(b).not.toBe(a)
      const bWait = await svc.call('GET', `${at}?lock=1`, { headers, key: KEYS.readLock, ticket: b })
      expect(bWait.status).toBe(202)
      expect(bWait.body).toMatchObject({ unavailable: true })
      expect(bWait.headers.get('x-ticket')).toBe(b)

      // A: writeData() (JSON body, 200 or 204 expected), then unlockData() (PUT .../unlock, 200).
      expect((await svc.call('PUT', at, { headers, ticket: a, json: { qty: 5 } })).status).toBe(204)
      const aUnlock = await svc.call('PUT', `${at}/unlock`, { headers, key: KEYS.readLock, ticket: a })
      expect([aUnlock.status, aUnlock.body]).toEqual([200, { unlocked: true }])

      // B: getData(lock: true) now gets the lock and A's data, as a JSON string in `data`.
      const bRead = await svc.call('GET', `${at}?lock=1`, { headers, key: KEYS.readLock, ticket: b })
      expect([bRead.status, bRead.body]).toEqual([200, { resource: name, selector: 'queue', data: '{"qty":5}' }])
      expect(JSON.parse((bRead.body as { data: string }).data)).toEqual({ qty: 5 })
      expect((await svc.call('PUT', `${at}/unlock`, { headers, key: KEYS.readLock, ticket: b })).status).toBe(200)

      // A fresh client: lock and unlock.
      const cLock = await svc.call('PUT', `${at}/lock`, { headers, key: KEYS.readLock })
      expect([cLock.status, cLock.body]).toEqual([200, { locked: true }])
      const c = cLock.headers.get('x-ticket')!
      expect((await svc.call('PUT', `${at}/unlock`, { headers, key: KEYS.readLock, ticket: c })).status).toBe(200)

      // The blog post's shape stays available per request, and its POST unlock keeps working.
      const raw = await svc.call('GET', `${at}?lock=0&format=raw`, { headers, key: KEYS.read })
      expect(raw.body).toEqual({ qty: 5 })
      const dLock = await svc.call('GET', `${at}?lock=1`, { key: KEYS.readLock })
      expect(
        (await svc.call('POST', `${at}/unlock`, { key: KEYS.readLock, ticket: dLock.headers.get('x-ticket')! })).status,
      ).toBe(200)
    })

    it('sends the ticket header as X-Ticket on the wire, and reads it in any case', async () => {
      const name = uniqueName('case')
      await svc.call('POST', '/resource', { json: { name, timeout: 30 } })
      const lock = await rawHeaders(
        svc.url,
        `PUT /resource/${name}/s/lock HTTP/1.1\r\nHost: x\r\nx-api-key: ${KEYS.readLock}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
      )
      const line = lock.find((l) => /^x-ticket:/i.test(l))!
      expect(line).toMatch(/^X-Ticket: \S+$/)
      const ticket = line.slice('X-Ticket: '.length)
      const read = await rawHeaders(
        svc.url,
        `GET /resource/${name}/s?lock=1 HTTP/1.1\r\nHost: x\r\nx-api-key: ${KEYS.readLock}\r\nX-TICKET: ${ticket}\r\nConnection: close\r\n\r\n`,
      )
      expect(read[0]).toBe('HTTP/1.1 200 OK')
      expect(read).toContain(`X-Ticket: ${ticket}`)
    })
  })
}
