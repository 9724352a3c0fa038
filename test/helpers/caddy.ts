/**
 * A private Caddy for tests (Debian's caddy): a Caddyfile in a temp folder, no admin endpoint, no
 * automatic HTTPS, its data and config folders its own, in the foreground, stopped with the process.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './redis.js'
import { listening, startServerProcess } from './server-process.js'

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
  const server = await startServerProcess(
    'caddy',
    ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'],
    () => listening(port),
    { env, timeout: 15_000 },
  )
  return {
    url,
    stop: server.stop,
  }
}
