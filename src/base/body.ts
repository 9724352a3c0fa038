/**
 * The one place the package reads a request body itself (the dashboard's sign-in form and its
 * controls; the lock service's bodies are Fastify's, the proxy streams bodies and never reads them).
 * Every way a client can misbehave ends as an answer to send, never as a rejected promise: a body
 * cut off (the socket closed mid-body), a body larger than the limit (by `Content-Length` before a
 * byte is read, or as it streams), a body slower than the timeout, a compressed body, bytes that are
 * not UTF-8. No dependencies.
 */
import type { IncomingMessage } from 'node:http'

/** How much of a body is read, and for how long. */
export interface BodyLimits {
  /** Largest body in bytes; larger is `413`. */
  limit: number
  /** ms the whole body may take to arrive; slower is `408`. */
  timeout: number
}

/**
 * A body read whole (`ok`), or why not: `status` and `message` to answer with. `aborted`: the client
 * went away (nothing to answer). A failed read leaves the connection unusable for a next request
 * (part of the body may be unread): answer with `Connection: close` ({@link BODY_ERROR_HEADERS}).
 */
export type BodyRead =
  | { ok: true; text: string }
  | { ok: false; status: 400 | 408 | 413 | 415; message: string; aborted: boolean }

/** Headers for the answer to a failed read: the rest of the body is not read, so the connection ends. */
export const BODY_ERROR_HEADERS: Readonly<Record<string, string>> = Object.freeze({ connection: 'close' })

/** Default limits: a small form or JSON document, within 10 s. */
export const SMALL_BODY: BodyLimits = Object.freeze({ limit: 4096, timeout: 10_000 })

/** Reads `req`'s body as UTF-8 text within `limits`. Never rejects, never throws. */
export function readBody(req: IncomingMessage, limits: BodyLimits = SMALL_BODY): Promise<BodyRead> {
  const fail = (status: 400 | 408 | 413 | 415, message: string, aborted = false): BodyRead => ({
    ok: false,
    status,
    message,
    aborted,
  })
  const encoding = req.headers['content-encoding']
  if (encoding !== undefined && String(encoding).trim().toLowerCase() !== 'identity') {
    return Promise.resolve(fail(415, 'send the body without Content-Encoding'))
  }
  const declared = req.headers['content-length']
  if (declared !== undefined && Number(declared) > limits.limit)
    return Promise.resolve(fail(413, `the body is limited to ${limits.limit} bytes`))
  if (req.readableEnded) return Promise.resolve({ ok: true, text: '' })
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let size = 0
    let settled = false
    const settle = (result: BodyRead): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      req.removeListener('data', onData)
      req.removeListener('end', onEnd)
      req.removeListener('aborted', onAborted)
      req.removeListener('close', onClose)
      // Keep an 'error' listener for good: an error after this must not become an uncaught one.
      if (!result.ok) req.resume()
      resolve(result)
    }
    const onData = (chunk: Buffer): void => {
      size += chunk.length
      if (size > limits.limit) return settle(fail(413, `the body is limited to ${limits.limit} bytes`))
      chunks.push(chunk)
    }
    const onEnd = (): void => {
      try {
        settle({ ok: true, text: new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks, size)) })
      } catch {
        settle(fail(400, 'the body is not UTF-8'))
      }
    }
    const onAborted = (): void => settle(fail(400, 'the body was cut off', true))
    const onClose = (): void => settle(fail(400, 'the body was cut off', true))
    const timer = setTimeout(
      () => settle(fail(408, `the body did not arrive within ${limits.timeout} ms`)),
      limits.timeout,
    )
    timer.unref()
    req.on('data', onData)
    req.once('end', onEnd)
    req.once('aborted', onAborted)
    req.once('close', onClose)
    req.on('error', () => settle(fail(400, 'the body was cut off', true)))
  })
}
