/**
 * A lock service listening on 127.0.0.1 on a free port, driven over real HTTP with fetch.
 */
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { createLockServer, type LockServerOptions } from '../../src/lock-server/server.js'

/** Keys of each level used by the tests (16+ visible ASCII characters). */
export const KEYS = {
  read: 'read-key-0123456789abcdef',
  readLock: 'lock-key-0123456789abcdef',
  write: 'write-key-0123456789abcdef',
} as const

export interface Reply {
  status: number
  headers: Headers
  /** The parsed JSON body, `undefined` when empty. */
  body: unknown
  text: string
}

export interface CallOptions {
  key?: string | null
  ticket?: string
  /** A value sent as JSON (application/json). */
  json?: unknown
  /** A raw body with its own headers. */
  raw?: string
  headers?: Record<string, string>
}

export interface Service {
  app: FastifyInstance
  url: string
  call(method: string, path: string, options?: CallOptions): Promise<Reply>
  close(): Promise<void>
}

/**
 * A lock service on a free port. Reads answer the stored JSON itself (`dataFormat: 'raw'`, the blog
 * post's API the behaviour suites were written for) unless `dataFormat` is given (undefined: the
 * default, the Small Resource Server's envelope; see srs.ts).
 */
export async function startService(options: LockServerOptions): Promise<Service> {
  const app = createLockServer({ apiKeys: { ...KEYS }, dataFormat: 'raw', ...options })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const url = `http://127.0.0.1:${port}`
  return {
    app,
    url,
    async call(method, path, o = {}) {
      const headers: Record<string, string> = { ...o.headers }
      const key = o.key === undefined ? KEYS.write : o.key
      if (key !== null) headers['x-api-key'] = key
      if (o.ticket !== undefined) headers['x-ticket'] = o.ticket
      let body: string | undefined
      if (o.json !== undefined) {
        headers['content-type'] = 'application/json'
        body = JSON.stringify(o.json)
      } else if (o.raw !== undefined) {
        body = o.raw
      }
      const res = await fetch(url + path, { method, headers, body })
      const text = await res.text()
      let parsed: unknown
      if (text !== '') {
        try {
          parsed = JSON.parse(text)
        } catch {
          parsed = undefined
        }
      }
      return { status: res.status, headers: res.headers, body: parsed, text }
    },
    close: () => app.close(),
  }
}

let n = 0
/** A resource name unique to this run. */
export const uniqueName = (label: string): string => `${label}-${++n}-${process.pid}`
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
