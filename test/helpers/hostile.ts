/**
 * Clients that misbehave, on raw sockets (fetch and undici would not): a body cut off after a few
 * bytes, a body sent a byte at a time, a client that never reads its answer, bytes as written.
 */
import { connect, type Socket } from 'node:net'

/** Host and port of a base URL. */
function target(base: string): { host: string; port: number } {
  const u = new URL(base)
  return { host: u.hostname, port: Number(u.port || 80) }
}

/**
 * Sends `head` (a request's lines, without the blank line) and `body`, then reads until the server
 * closes or `wait` ms pass; resolves what came back (`''` when nothing did). Never rejects.
 */
export function raw(
  base: string,
  head: string,
  body: string | Buffer = '',
  options: { wait?: number; close?: 'after-send' | 'when-answered' } = {},
): Promise<string> {
  const { host, port } = target(base)
  const wait = options.wait ?? 2_000
  return new Promise((resolve) => {
    let got = ''
    let done = false
    const finish = (): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      resolve(got)
    }
    const socket: Socket = connect(port, host, () => {
      socket.write(`${head}\r\n\r\n`)
      if (body.length > 0) socket.write(body)
      if (options.close === 'after-send') setTimeout(finish, 20)
    })
    const timer = setTimeout(finish, wait)
    socket.setEncoding('latin1')
    socket.on('data', (d: string) => {
      got += d
      if (options.close === 'when-answered' && /\r\n\r\n/.test(got)) setTimeout(finish, 20)
    })
    socket.on('error', finish)
    socket.on('close', finish)
  })
}

/** A request whose `Content-Length` promises `declared` bytes; `sent` of them are written, then the socket closes. */
export function cutOff(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  declared: number,
  sent: string,
): Promise<string> {
  const lines = [
    `${method} ${path} HTTP/1.1`,
    `Host: ${new URL(base).host}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    `Content-Length: ${declared}`,
  ]
  return raw(base, lines.join('\r\n'), sent, { close: 'after-send' })
}

/** The status code of a raw answer, or 0. */
export const statusOf = (answer: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)
