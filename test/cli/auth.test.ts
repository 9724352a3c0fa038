/**
 * `airlock auth`, `airlock nginx-config`, `airlock caddy-config` (issue 39), and the systemd unit
 * shipped for the service (deploy/airlock-auth.service): refusals name the flag and the fix; the
 * service answers forward-auth questions as the gate would; the configuration files are written
 * with the secrets kept private; the unit passes `systemd-analyze verify` and its flags start the
 * service.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { EXIT } from '../../src/cli/exit.js'
import { main } from '../../src/cli/main.js'
import { cli } from '../hostile/harness.js'

const SECRET = 'a-test-secret-of-at-least-32-bytes-0001'
const dir = mkdtempSync(join(tmpdir(), 'airlock-auth-cli-'))
const secretFile = join(dir, 'secret')
writeFileSync(secretFile, `# the first signs\n${SECRET}\nan-older-secret-of-at-least-32-bytes-02\n`)

async function run(
  argv: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; out: string; err: string }> {
  let out = ''
  let err = ''
  const code = await main(argv, { out: (t) => void (out += t), err: (t) => void (err += `${t}\n`), env }, '0.0.0')
  return { code, out, err }
}

describe('airlock auth: what it refuses', () => {
  it('no secret: 78, how to make one', async () => {
    const r = await run(['auth', '--port', '0'])
    expect(r.code).toBe(EXIT.CONFIG)
    expect(r.err).toMatch(/--secret-file FILE .*head -c 32 \/dev\/urandom/)
  })

  it('a short secret in the file: 78 naming it', async () => {
    writeFileSync(join(dir, 'short'), 'short\n')
    const r = await run(['auth', '--secret-file', join(dir, 'short')])
    expect(r.code).toBe(EXIT.CONFIG)
    expect(r.err).toMatch(/--secret-file\[0\] must be at least 32 bytes/)
  })

  it('request mode: 64 with the sentence and a pointer to airlock proxy', async () => {
    const r = await run(['auth', '--mode', 'request', '--secret-file', secretFile])
    expect(r.code).toBe(EXIT.USAGE)
    expect(r.err).toContain('never tell the service when a request ends')
    expect(r.err).toContain('airlock proxy --mode request')
  })

  it('request mode or an adaptive limit in --config: 64 naming the file', async () => {
    writeFileSync(join(dir, 'request.json'), JSON.stringify({ mode: 'request' }))
    expect((await run(['auth', '--config', join(dir, 'request.json'), '--secret-file', secretFile])).err).toContain(
      'request.json: mode: request cannot work behind forward-auth',
    )
    writeFileSync(join(dir, 'adaptive.json'), JSON.stringify({ limit: { min: 2, max: 10 } }))
    expect((await run(['auth', '--config', join(dir, 'adaptive.json'), '--secret-file', secretFile])).err).toContain(
      'an adaptive limit learns from the origin',
    )
  })

  it('bad flags: 64 naming the flag', async () => {
    for (const [flag, value] of [
      ['limit', '0'],
      ['refusal-cache', '61'],
      ['trust-proxy', ''],
      ['log-level', 'loud'],
      ['port', 'x'],
    ] as const) {
      const r = await run(['auth', `--${flag}`, value, '--secret-file', secretFile])
      expect(r.code, flag).toBe(EXIT.USAGE)
      expect(r.err, flag).toContain(`--${flag}`)
    }
  })
})

describe('airlock auth: answering', () => {
  it('continue with a pass, the busy page past the limit (--no-queue), the line by default, health', async () => {
    const busy = await cli(
      ['auth', '--port', '0', '--limit', '1', '--no-queue', '--secret-file', secretFile],
      {},
      /on (http:\/\/[^ /]+)\/\.airlock/,
    )
    try {
      const ask = (uri: string, from: string) =>
        fetch(`${busy.base}/.airlock/decide`, {
          headers: { 'x-original-uri': uri, 'x-original-method': 'GET', 'x-forwarded-for': from, accept: 'text/html' },
        })
      const first = await ask('/page', '203.0.113.1')
      expect(first.status).toBe(200)
      expect(first.headers.get('airlock-action')).toBe('continue')
      expect(first.headers.getSetCookie()[0]).toMatch(/^airlock_pass=p1~default~/)
      expect(first.headers.get('airlock-cookie-1')).toBe(first.headers.getSetCookie()[0])
      const second = await ask('/page', '203.0.113.2')
      expect(second.status).toBe(503)
      expect(second.headers.get('airlock-action')).toBe('answer')
      expect(second.headers.get('retry-after')).toMatch(/^\d+$/)
      expect(await second.text()).toContain('<html')
      expect((await fetch(`${busy.base}/.airlock/health`)).status).toBe(200)
      expect((await fetch(`${busy.base}/anything-else`)).status).toBe(404)
    } finally {
      await busy.stop()
    }
    const line = await cli(
      ['auth', '--port', '0', '--limit', '1', '--secret-file', secretFile],
      {},
      /on (http:\/\/[^ /]+)\/\.airlock/,
    )
    try {
      const ask = (from: string) =>
        fetch(`${line.base}/.airlock/decide`, {
          headers: {
            'x-forwarded-uri': '/page',
            'x-forwarded-method': 'GET',
            'x-forwarded-for': from,
            accept: 'text/html',
          },
        })
      expect((await ask('203.0.113.1')).status).toBe(200)
      const queued = await ask('203.0.113.2')
      expect(queued.status).toBe(202)
      expect(queued.headers.getSetCookie()[0]).toMatch(/^airlock_ticket=/)
    } finally {
      await line.stop()
    }
  })
})

describe('airlock nginx-config and caddy-config', () => {
  it('prints a server block for PHP-FPM and, with --write, the module, its settings (0640) and the busy page', async () => {
    const out = join(dir, 'nginx')
    const r = await run([
      'nginx-config',
      '--origin',
      'fastcgi:unix:/run/php/php8.2-fpm.sock',
      '--server-name',
      'example.com',
      '--dir',
      out,
      '--secret-file',
      secretFile,
      '--pass-ttl',
      '2m',
      '--write',
    ])
    expect(r.code).toBe(EXIT.OK)
    expect(r.out).toContain('server_name example.com;')
    expect(r.out).toContain('fastcgi_pass unix:/run/php/php8.2-fpm.sock;')
    expect(r.out).toContain(`js_import airlock from ${out}/airlock.js;`)
    const settings = JSON.parse(readFileSync(join(out, 'airlock.json'), 'utf8')) as {
      passTtl: number
      secrets: string[]
      gate: string
    }
    expect(settings).toMatchObject({
      gate: 'default',
      passTtl: 120_000,
      secrets: [SECRET, 'an-older-secret-of-at-least-32-bytes-02'],
    })
    expect(statSync(join(out, 'airlock.json')).mode & 0o777).toBe(0o640)
    expect(readFileSync(join(out, 'airlock.js'), 'utf8')).toContain('export default { pass, personal, decide }')
    expect(readFileSync(join(out, 'busy.html'), 'utf8')).toContain('<html')
  })

  it('an HTTP origin, auth_request, fail open', async () => {
    const r = await run([
      'nginx-config',
      '--origin',
      'http://127.0.0.1:8080',
      '--check',
      'auth_request',
      '--fail',
      'open',
      '--bypass',
      '/static,/health',
    ])
    expect(r.code).toBe(EXIT.OK)
    expect(r.out).toContain('auth_request /.airlock/auth-request;')
    expect(r.out).toContain('error_page 500 = @airlock_origin;')
    expect(r.out).toContain('location ^~ /static {')
    expect(r.out).not.toContain('js_import')
  })

  it('bad values: 64 naming the flag', async () => {
    for (const [flag, value] of [
      ['origin', 'ftp://x'],
      ['service', 'nope'],
      ['check', 'lua'],
      ['fail', 'maybe'],
      ['root', 'relative/path'],
      ['bypass', 'static'],
    ] as const) {
      const r = await run([
        'nginx-config',
        ...(flag === 'origin' ? [] : ['--origin', 'http://127.0.0.1:8080']),
        `--${flag}`,
        value,
      ])
      expect(r.code, flag).toBe(EXIT.USAGE)
      expect(r.err, flag).toContain(`--${flag}`)
    }
    expect((await run(['nginx-config'])).err).toContain('--origin is required')
    expect((await run(['nginx-config', '--origin', 'http://127.0.0.1:8080', '--write'])).code).toBe(EXIT.CONFIG)
  })

  it('caddy-config prints a site block; fail open is nginx only', async () => {
    const r = await run([
      'caddy-config',
      '--origin',
      'fastcgi:unix:/run/php/php8.2-fpm.sock',
      '--server-name',
      'example.com',
    ])
    expect(r.code).toBe(EXIT.OK)
    expect(r.out).toContain('example.com {')
    expect(r.out).toContain('php_fastcgi unix//run/php/php8.2-fpm.sock')
    expect(r.out).toContain('@continue header Airlock-Action continue')
    expect((await run(['caddy-config', '--origin', 'http://127.0.0.1:8080', '--fail', 'open'])).code).toBe(EXIT.USAGE)
  })
})

const UNIT = resolve(import.meta.dirname, '../../deploy/airlock-auth.service')
const hasSystemd = spawnSync('systemd-analyze', ['--version']).error === undefined

describe('the systemd unit (deploy/airlock-auth.service)', () => {
  it.skipIf(!hasSystemd && process.env.CI !== 'true')('passes systemd-analyze verify without a warning', () => {
    const r = spawnSync('systemd-analyze', ['verify', UNIT], { encoding: 'utf8' })
    expect(r.status, r.stderr).toBe(0)
    expect(r.stderr.trim()).toBe('')
  })

  it('its ExecStart flags start the service (its paths pointed at temp files)', async () => {
    const exec = /^ExecStart=(.*)$/m.exec(readFileSync(UNIT, 'utf8'))![1]!.split(/\s+/)
    const args = exec.slice(exec.findIndex((a) => a.endsWith('cli.js')) + 1)
    writeFileSync(join(dir, 'auth.json'), JSON.stringify({ limit: 20 }))
    const local = args.map((a) =>
      a === '/etc/airlock/auth.json'
        ? join(dir, 'auth.json')
        : a === '/etc/airlock/secret'
          ? secretFile
          : a === '8787'
            ? '0'
            : a,
    )
    const service = await cli(local, {}, /on (http:\/\/[^ /]+)\/\.airlock/)
    try {
      expect((await fetch(`${service.base}/.airlock/health`)).status).toBe(200)
    } finally {
      await service.stop()
    }
  })
})
