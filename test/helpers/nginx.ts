/**
 * A private nginx for tests: its own prefix directory in a temp folder, a free loopback port, in
 * the foreground (stopped with the process), never the machine's nginx.
 */
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './redis.js'
import { listening, startServerProcess } from './server-process.js'

/** Whether nginx is on PATH (CI installs it; tests needing it run there whatever this says). */
export const hasNginx = spawnSync('nginx', ['-v']).error === undefined

export interface Nginx {
  url: string
  stop(): Promise<void>
}

/** Whether Debian's njs module (libnginx-mod-http-js) is installed. */
export const NJS_MODULE_PATH = '/usr/lib/nginx/modules/ngx_http_js_module.so'
export const hasNjs = existsSync(NJS_MODULE_PATH)

/** Starts nginx with one `server` whose body is `locations` (its `location` blocks and settings); resolves once it answers. */
export async function startNginx(locations: string, options: { connections?: number } = {}): Promise<Nginx> {
  return startNginxWith((port) => `server { listen 127.0.0.1:${port};\n${locations}\n}`, options)
}

/**
 * Starts nginx with `http` (what goes inside `http {}`: a generated configuration), given the free
 * port and nginx's own directory; the njs module is loaded when installed. Resolves once it answers.
 */
export async function startNginxWith(
  http: (port: number, dir: string) => string,
  options: { connections?: number; workers?: number } = {},
): Promise<Nginx & { dir: string; port: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-nginx-'))
  const port = await freePort()
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${dir}/${t};`).join(' ')
  // Debian's FastCGI parameters, as `include fastcgi.conf;` finds them beside nginx.conf.
  if (existsSync('/etc/nginx/fastcgi.conf')) copyFileSync('/etc/nginx/fastcgi.conf', join(dir, 'fastcgi.conf'))
  writeFileSync(
    join(dir, 'nginx.conf'),
    // As root, workers run as root too: the temp folders (mode 0700) are root's.
    `${hasNjs ? `load_module ${NJS_MODULE_PATH};\n` : ''}${process.getuid?.() === 0 ? 'user root;\n' : ''}worker_processes ${options.workers ?? 1}; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log;
events { worker_connections ${options.connections ?? 256}; }
http { access_log off; ${temp}
${http(port, dir)}
}
`,
  )
  const server = await startServerProcess('nginx', ['-c', join(dir, 'nginx.conf'), '-p', dir], () => listening(port))
  const url = `http://127.0.0.1:${port}`
  return {
    url,
    dir,
    port,
    stop: server.stop,
  }
}
