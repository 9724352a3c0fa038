/**
 * A private nginx for tests: its own prefix directory in a temp folder, a free loopback port, in
 * the foreground (stopped with the process), never the machine's nginx.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './redis.js'
import { until } from './wait.js'

/** Whether nginx is on PATH (CI installs it; tests needing it run there whatever this says). */
export const hasNginx = spawnSync('nginx', ['-v']).error === undefined

export interface Nginx {
  url: string
  stop(): Promise<void>
}

/** Starts nginx with one `server` whose body is `locations` (its `location` blocks and settings); resolves once it answers. */
export async function startNginx(locations: string, options: { connections?: number } = {}): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-nginx-'))
  const port = await freePort()
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${dir}/${t};`).join(' ')
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log;
events { worker_connections ${options.connections ?? 256}; }
http { access_log off; ${temp}
  server { listen 127.0.0.1:${port};
${locations}
  } }
`,
  )
  const proc: ChildProcess = spawn('nginx', ['-c', join(dir, 'nginx.conf'), '-p', dir], { stdio: 'ignore' })
  const url = `http://127.0.0.1:${port}`
  await until(async () => (await fetch(`${url}/`).catch(() => null)) !== null, 10_000, 50)
  return {
    url,
    stop: () =>
      new Promise((done) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return done()
        proc.once('exit', () => done())
        proc.kill('SIGTERM')
      }),
  }
}
