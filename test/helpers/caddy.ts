/**
 * A private Caddy for tests (Debian's caddy): a Caddyfile in a temp folder, no admin endpoint, no
 * automatic HTTPS, its data and config folders its own, in the foreground, stopped with the process.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './redis.js'
import { until } from './wait.js'

export const hasCaddy = spawnSync('caddy', ['version']).error === undefined

export interface Caddy {
  url: string
  stop(): Promise<void>
}

/** Starts Caddy with the site block `site(address)` (`address`: `http://127.0.0.1:PORT`). */
export async function startCaddy(site: (address: string) => string): Promise<Caddy> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-caddy-'))
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  writeFileSync(join(dir, 'Caddyfile'), `{\n\tadmin off\n\tauto_https off\n}\n${site(url)}\n`)
  const env = { ...process.env, HOME: dir, XDG_DATA_HOME: join(dir, 'data'), XDG_CONFIG_HOME: join(dir, 'config') }
  const proc: ChildProcess = spawn('caddy', ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  // Whatever happens to the test, the server goes with its process.
  const onExit = (): void => void proc.kill('SIGTERM')
  process.once('exit', onExit)
  let stderr = ''
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  await until(async () => {
    if (proc.exitCode !== null) throw new Error(`caddy exited ${proc.exitCode}: ${stderr.slice(-2000)}`)
    return new Promise<boolean>((done) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy()
        done(true)
      })
      socket.on('error', () => done(false))
    })
  }, 15_000, 50)
  return {
    url,
    stop: () =>
      new Promise((done) => {
        process.removeListener('exit', onExit)
        if (proc.exitCode !== null || proc.signalCode !== null) return done()
        proc.once('exit', () => done())
        proc.kill('SIGTERM')
      }),
  }
}
