/** Origins for the proxy tests: Python's http.server, PHP's built-in server, a Node origin. */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { WebSocketServer } from 'ws'
import { freePort } from '../helpers/redis.js'
import { until } from '../helpers/wait.js'

export interface Origin {
  url: string
  stop(): Promise<void>
}

/** `cmd args` in `cwd`, serving on `port`: resolves once it answers `GET /`. */
export async function spawned(cmd: string, args: string[], cwd: string, port: number): Promise<Origin> {
  const proc: ChildProcess = spawn(cmd, args, { cwd, stdio: 'ignore' })
  const url = `http://127.0.0.1:${port}`
  await until(async () => (await fetch(`${url}/`).catch(() => null)) !== null, 15_000, 100)
  return {
    url,
    stop: () =>
      new Promise((done) => {
        if (proc.exitCode !== null) return done()
        proc.once('exit', () => done())
        proc.kill('SIGTERM')
      }),
  }
}

/** `python3 -m http.server` on a temp dir holding index.html and data.txt. */
export async function pythonOrigin(): Promise<Origin> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-py-'))
  writeFileSync(join(dir, 'index.html'), '<h1>Hello from Python</h1>')
  writeFileSync(join(dir, 'data.txt'), 'x'.repeat(100_000))
  const port = await freePort()
  return spawned('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1'], dir, port)
}

/**
 * `php -S` with a page that sets a cookie and echoes the method, URI, body and X-Forwarded-*;
 * `/upload` answers the body's length and MD5, `/headers` the headers it got (and sends
 * `Connection: close`), `/release` sends `Airlock-Command: release`.
 */
export async function phpOrigin(): Promise<Origin> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-php-'))
  writeFileSync(
    join(dir, 'index.php'),
    `<?php
$uri = $_SERVER['REQUEST_URI'] ?? '';
if ($uri === '/teapot') { http_response_code(418); echo 'teapot'; return; }
if ($uri === '/upload') { $b = file_get_contents('php://input'); echo json_encode(['length' => strlen($b), 'md5' => md5($b)]); return; }
if ($uri === '/headers') { header('Connection: close'); echo json_encode(array_change_key_case(getallheaders(), CASE_LOWER)); return; }
if ($uri === '/release') { header('Airlock-Command: release'); echo 'released'; return; }
setcookie('origin_session', 'abc123');
header('X-Origin: php');
echo "<h1>Hello from PHP</h1>";
echo json_encode(['method' => $_SERVER['REQUEST_METHOD'], 'uri' => $_SERVER['REQUEST_URI'], 'body' => file_get_contents('php://input'),
  'xff' => $_SERVER['HTTP_X_FORWARDED_FOR'] ?? null, 'proto' => $_SERVER['HTTP_X_FORWARDED_PROTO'] ?? null, 'xhost' => $_SERVER['HTTP_X_FORWARDED_HOST'] ?? null]);
`,
  )
  const port = await freePort()
  return spawned(
    'php',
    ['-d', 'post_max_size=0', '-d', 'memory_limit=512M', '-S', `127.0.0.1:${port}`, join(dir, 'index.php')],
    dir,
    port,
  )
}

/**
 * A Node origin: `PUT /upload` counts the bytes it reads; `GET /download?mb=N` streams N MB; `/hang`
 * never answers; `/break` promises 1,000 bytes, sends 10 and drops the connection; `/ws` echoes
 * WebSockets (`openSockets()`: how many are open now); anything else answers `ok`.
 */
export async function nodeOrigin(): Promise<Origin & { uploaded: () => number; openSockets: () => number }> {
  let uploaded = 0
  const server: Server = createServer((req, res) => {
    if (req.url === '/upload') {
      let n = 0
      req.on('data', (c: Buffer) => (n += c.length))
      req.on('end', () => {
        uploaded = n
        res.end(String(n))
      })
      return
    }
    if (req.url === '/hang') return
    if (req.url === '/break') {
      res.writeHead(200, { 'content-length': '1000' })
      res.write('x'.repeat(10))
      setTimeout(() => req.socket.destroy(), 50)
      return
    }
    if (!req.url?.startsWith('/download')) return void res.end('ok')
    const mb = Number(new URL(req.url, 'http://x').searchParams.get('mb') ?? 1)
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(mb * 1024 * 1024) })
    const chunk = Buffer.alloc(64 * 1024, 7)
    let left = mb * 16
    const pump = (): void => {
      while (left > 0) {
        left--
        if (!res.write(chunk)) return void res.once('drain', pump)
      }
      res.end()
    }
    pump()
  })
  const wss = new WebSocketServer({ server, path: '/ws' })
  wss.on('connection', (ws) => ws.on('message', (data, binary) => ws.send(data, { binary })))
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    uploaded: () => uploaded,
    openSockets: () => wss.clients.size,
    stop: () =>
      new Promise((done) => {
        wss.close()
        server.closeAllConnections()
        server.close(() => done())
      }),
  }
}
