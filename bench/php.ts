/**
 * A real PHP site under a real hug (issue 39; `npm run bench:php`, a program, not a test).
 *
 * The site: Debian's nginx in front of PHP-FPM (`pm = static`, `pm.max_children = 4`, a modest
 * server), a page that does real work against a real database (SQLite through PDO, WAL): a query
 * over 2,000 rows, then a 50 ms write transaction (`BEGIN IMMEDIATE`, an update, a commit), so at
 * most ~20 pages a second whatever the CPU. Static files from nginx.
 *
 * Each row, same run: BROWSERS (4, the limit) visitors keeping their cookies and browsing without
 * pause from loopback addresses of their own; with a crowd, CROWD (500) cookie-less connections from
 * 250 addresses that retry the moment an answer ends, for SECONDS (20); a FOLLOWER who arrives 3 s
 * in and follows the page it gets (the busy page: again after Retry-After; the waiting page: a poll
 * every 2 s); one browser leaves 5 s in (a slot frees once its pass lapses: --pass-ttl 10s).
 * - unshielded: nginx alone at exactly 4 in flight (the baseline), then under the crowd;
 * - shielded, limit 4: nginx + njs + airlock auth (the line, the recommended default; and the busy
 *   page), Caddy + airlock auth (the line), airlock proxy --queue in front of nginx.
 * Reported: pages PHP served a second (its own counter), against the baseline; PHP's 5xx (500,
 * 502, 504: the shield's own answers are 503 and 202); crowd timeouts; p99 of pages the browsers
 * got against the unloaded p99; how long the follower took to get the real page.
 * Env: SECONDS, CROWD, BROWSERS, ROWS (a regular expression of row names), BENCH_RESULTS. Needs nginx, libnginx-mod-http-js, php-fpm,
 * php-sqlite3, caddy (rows whose part is missing say so).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from 'undici'
import { caddyConfig, nginxConfig } from '../src/connector/configs.js'
import { NJS_MODULE, njsSettings } from '../src/connector/njs.js'
import { hasCaddy, startCaddy } from '../test/helpers/caddy.js'
import { hasNginx, hasNjs, startNginxWith } from '../test/helpers/nginx.js'
import { hasPdoSqlite, hasPhpFpm, startPhpFpm, type PhpFpm } from '../test/helpers/php-fpm.js'
import {
  describeMachine,
  envNumber,
  fixed,
  machine,
  markdownTable,
  percentile,
  stopChild,
  writeResults,
} from './lib.js'

const SECONDS = envNumber('SECONDS', 20)
const CROWD = envNumber('CROWD', 500)
const BROWSERS = envNumber('BROWSERS', 4)
const LIMIT = 4
const PASS_TTL = 10_000
const SECRET = 'php-bench-secret-that-is-at-least-32-bytes-long'
const children: ChildProcess[] = []
/** ROWS: a regular expression of the rows to run (the baseline always runs). */
const ROWS = process.env.ROWS ? new RegExp(process.env.ROWS) : undefined
const wanted = (name: string): boolean => ROWS === undefined || ROWS.test(name)

const PAGE = `<?php
$db = new PDO('sqlite:' . __DIR__ . '/site.db', null, null, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION, PDO::ATTR_TIMEOUT => 30]);
$posts = $db->query("SELECT id, title FROM posts WHERE title LIKE '%7%' ORDER BY id DESC LIMIT 20")->fetchAll();
$db->exec('BEGIN IMMEDIATE');
$db->exec('UPDATE stats SET pages = pages + 1');
usleep(50000);
$db->exec('COMMIT');
header('Content-Type: text/html; charset=utf-8');
echo "<!doctype html><title>A post</title><h1>The post everyone links to</h1><ul>";
foreach ($posts as $p) echo '<li>' . htmlspecialchars($p['title']) . '</li>';
echo "</ul><!-- page-from-php -->";
`
const SETUP = `<?php
$db = new PDO('sqlite:' . $argv[1] . '/site.db');
$db->exec('PRAGMA journal_mode=WAL');
$db->exec('CREATE TABLE posts (id INTEGER PRIMARY KEY, title TEXT)');
$db->exec('CREATE TABLE stats (pages INTEGER)');
$db->exec('INSERT INTO stats VALUES (0)');
$db->beginTransaction();
for ($i = 0; $i < 2000; $i++) $db->exec("INSERT INTO posts (title) VALUES ('post number $i')");
$db->commit();
`
const COUNT = `<?php echo (new PDO('sqlite:' . __DIR__ . '/site.db'))->query('SELECT pages FROM stats')->fetchColumn();`

/** A visitor from its own loopback address, keeping its cookies, following what it is answered. */
class Visitor {
  readonly client: Client
  private jar = new Map<string, string>()
  readonly latencies: number[] = []
  pages = 0
  /** 500, 502, 504: the origin failed (the shield's own answers are 503 and 202). */
  failures = 0
  /** Requests that got no answer (a connection refused or reset, a timeout). */
  errors = 0
  constructor(
    readonly origin: string,
    address: string,
  ) {
    this.client = new Client(origin, { localAddress: address, headersTimeout: 30_000, bodyTimeout: 30_000 })
  }

  private cookie(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ')
  }

  async get(path: string, poll = false): Promise<{ status: number; body: string; retryAfter: number }> {
    const t0 = performance.now()
    const r = await this.client.request({
      method: 'GET',
      path,
      headers: {
        accept: poll ? 'application/json' : 'text/html',
        cookie: this.cookie(),
        ...(poll ? { 'x-airlock-poll': '1' } : {}),
      },
    })
    const body = await r.body.text()
    const set = r.headers['set-cookie']
    for (const c of set === undefined ? [] : Array.isArray(set) ? set : [set]) {
      const [pair] = c.split(';')
      const eq = pair!.indexOf('=')
      const name = pair!.slice(0, eq)
      const value = pair!.slice(eq + 1)
      if (value === '' || /max-age=0/i.test(c)) this.jar.delete(name)
      else this.jar.set(name, value)
    }
    if (body.includes('page-from-php')) {
      this.pages++
      this.latencies.push(performance.now() - t0)
    }
    if (r.statusCode === 500 || r.statusCode === 502 || r.statusCode === 504) this.failures++
    return { status: r.statusCode, body, retryAfter: Number(r.headers['retry-after'] ?? 1) }
  }

  /** Until it has the real page, following the pages as a browser does; resolves the ms it took, or null by `until`. */
  async follow(until: number): Promise<number | null> {
    const t0 = Date.now()
    let r = await this.get('/index.php')
    while (Date.now() < until) {
      if (r.body.includes('page-from-php')) return Date.now() - t0
      if (r.status === 202) {
        // The waiting page polls until admitted, then loads the page.
        await sleep(2_000)
        const poll = await this.get('/index.php', true)
        r =
          poll.status === 200 && poll.body.includes('admitted')
            ? await this.get('/index.php')
            : poll.status === 202
              ? poll
              : await this.get('/index.php')
      } else {
        // The busy page tries again by itself after Retry-After (+1 s, as its script does).
        await sleep((r.retryAfter + 1) * 1000)
        r = await this.get('/index.php')
      }
    }
    return null
  }

  /** Browses without pause until `until` (following the pages when refused). */
  async browse(until: number): Promise<void> {
    while (Date.now() < until) {
      const r = await this.get('/index.php').catch(() => null)
      if (r === null) {
        this.errors++
        await sleep(100)
      } else if (!r.body.includes('page-from-php')) await this.follow(until)
    }
  }
}

/** A process's resident memory, KB (0 once it is gone). */
function rssOf(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)
  } catch {
    return 0
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const address = (group: number, i: number) => `127.${group}.${1 + Math.floor(i / 250)}.${1 + (i % 250)}`

function start(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(child)
  return new Promise((resolve, reject) => {
    let out = ''
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}: ${out}`)))
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const m = ready.exec(out)
      if (m) resolve({ child, match: m })
    })
  })
}

function crowd(url: string): Promise<{ statuses: Record<number, number>; errors: number; perSecond: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./php/crowd.ts', import.meta.url).pathname], {
    env: { ...process.env, URL: url, CONNECTIONS: String(CROWD), SECONDS: String(SECONDS) },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  return new Promise((resolve, reject) =>
    child.on('exit', () => (out ? resolve(JSON.parse(out)) : reject(new Error('the crowd printed nothing')))),
  )
}

interface Row {
  name: string
  pagesPerSecond: number | null
  ofBaseline: string
  php5xx: number
  crowd: string
  p99: number | null
  follower: string
  note?: string
}

const missing: string[] = []
if (!hasNginx) missing.push('nginx')
if (!hasPhpFpm) missing.push('php-fpm')
if (!hasPdoSqlite) missing.push('php-sqlite3')
if (missing.length > 0) {
  console.log(
    `bench:php needs ${missing.join(', ')} (apt-get install nginx php-fpm php-sqlite3 libnginx-mod-http-js caddy)`,
  )
  process.exit(0)
}

const rows: Row[] = []
let php: PhpFpm | undefined
try {
  php = await startPhpFpm({ 'index.php': PAGE, 'count.php': COUNT, 'style.css': 'body{color:#123}\n' })
  spawnSync('php', ['-r', SETUP.replace('<?php', ''), '--', php.root], { stdio: 'inherit' })
  const root = php.root
  const pagesSoFar = (): number => Number(spawnSync('php', [join(root, 'count.php')]).stdout.toString())
  const plain = await startNginxWith(
    (listen) => `server {
    listen 127.0.0.1:${listen};
    root ${root};
    index index.php;
    location / { try_files $uri $uri/ /index.php?$args; }
    location ~ \\.php$ { include fastcgi.conf; fastcgi_pass ${php!.address}; }
  }`,
    { connections: 4096 },
  )

  /** One row: the browsers (and the crowd, the follower) against `url`. */
  const run = async (
    name: string,
    url: string,
    withCrowd: boolean,
    baseline?: number,
    unloadedP99?: number,
    shieldPid?: number,
  ): Promise<Row & { latencies: number[] }> => {
    const end = Date.now() + SECONDS * 1000
    // The shield's memory (its Node process's resident set), sampled each second.
    let rss = shieldPid === undefined ? 0 : rssOf(shieldPid)
    const rssAtStart = rss
    const sampling =
      shieldPid === undefined ? undefined : setInterval(() => (rss = Math.max(rss, rssOf(shieldPid))), 1000)
    const before = pagesSoFar()
    const t0 = Date.now()
    const browsers = Array.from({ length: BROWSERS }, (_, i) => new Visitor(url, address(2, i)))
    // The browsers get in first; then the crowd comes.
    await Promise.all(browsers.map((b) => b.get('/index.php')))
    const crowdRun = withCrowd ? crowd(`${url}/index.php`) : Promise.resolve(undefined)
    const leaving = withCrowd ? Date.now() + 5_000 : end
    const browsing = browsers.map((b, i) => b.browse(i === 0 ? leaving : end))
    let followed: number | null | undefined
    const follower = withCrowd
      ? sleep(3_000).then(async () => {
          const f = new Visitor(url, address(3, 1))
          followed = await f.follow(Date.now() + 60_000)
          browsers.push(f)
          if (followed !== null) await f.browse(end)
        })
      : Promise.resolve()
    // Pages are counted over the window (the follower may go on past it, to get its page).
    const window = sleep(end - Date.now()).then(() => ({
      pages: pagesSoFar() - before,
      seconds: (Date.now() - t0) / 1000,
    }))
    const [c, { pages, seconds }] = await Promise.all([crowdRun, window, ...browsing, follower])
    clearInterval(sampling)
    const latencies = browsers.flatMap((b) => b.latencies)
    const php5xx =
      browsers.reduce((a, b) => a + b.failures, 0) +
      (c ? (c.statuses[500] ?? 0) + (c.statuses[502] ?? 0) + (c.statuses[504] ?? 0) : 0)
    const unanswered = browsers.reduce((a, b) => a + b.errors, 0)
    await Promise.all(browsers.map((b) => b.client.close()))
    const p99 = latencies.length ? percentile(latencies, 99) : null
    return {
      name,
      pagesPerSecond: pages / seconds,
      ofBaseline: baseline ? fixed(pages / seconds / baseline, 2) : '1.00',
      php5xx,
      crowd: c
        ? `${c.perSecond}/s: ${Object.entries(c.statuses)
            .map(([s, n]) => `${n} x ${s}`)
            .join(', ')}${c.errors ? `, ${c.errors} errors/timeouts` : ''}`
        : '-',
      p99: p99 === null ? null : Math.round(p99),
      follower: followed === undefined ? '-' : followed === null ? 'no page in 60 s' : `${fixed(followed / 1000, 1)} s`,
      note: [
        unanswered ? `${unanswered} browser requests unanswered` : '',
        unloadedP99 && p99 ? `p99 ${fixed(p99 / unloadedP99, 1)}x unloaded` : '',
        shieldPid ? `Node ${fixed(rssAtStart / 1024)} MB idle, ${fixed(rss / 1024)} MB at most` : '',
      ]
        .filter(Boolean)
        .join('; '),
      latencies,
    }
  }

  const base = await run(`nginx alone, ${BROWSERS} in flight, no crowd (the baseline)`, plain.url, false)
  rows.push(base)
  const baseline = base.pagesPerSecond!
  const unloaded = base.p99 ?? undefined
  if (wanted('nginx alone, crowd'))
    rows.push(await run(`nginx alone, crowd of ${CROWD}`, plain.url, true, baseline, unloaded))

  const auth = async (queue: boolean) => {
    const { child, match } = await start(
      [new URL('./proxy/auth.ts', import.meta.url).pathname],
      { LIMIT: String(LIMIT), QUEUE: queue ? '1' : '0', PASS_TTL: String(PASS_TTL), SECRET },
      /listening (\d+)/,
    )
    return { child, port: Number(match[1]) }
  }
  for (const queue of [true, false]) {
    const name = `nginx + njs + airlock auth, ${queue ? 'the line (recommended)' : 'busy page (--no-queue)'}`
    if (!wanted(name)) continue
    if (!hasNjs) {
      rows.push({
        name,
        pagesPerSecond: null,
        ofBaseline: '-',
        php5xx: 0,
        crowd: '-',
        p99: null,
        follower: '-',
        note: 'libnginx-mod-http-js missing',
      })
      continue
    }
    const service = await auth(queue)
    const dir = mkdtempSync(join(tmpdir(), 'airlock-njs-'))
    writeFileSync(join(dir, 'airlock.js'), NJS_MODULE)
    writeFileSync(
      join(dir, 'airlock.json'),
      JSON.stringify(
        njsSettings(
          {
            name: 'default',
            cookieName: 'airlock_pass',
            ticketCookieName: 'airlock_ticket',
            passTtl: PASS_TTL,
            retryAfter: 5,
          },
          [SECRET],
          'closed',
        ),
      ),
    )
    const nginx = await startNginxWith(
      (listen, own) =>
        nginxConfig({
          origin: `fastcgi:${php!.address}`,
          service: `127.0.0.1:${service.port}`,
          listen: `127.0.0.1:${listen}`,
          root,
          dir,
          cacheDir: join(own, 'cache'),
        }),
      { connections: 4096 },
    )
    rows.push(await run(name, nginx.url, true, baseline, unloaded, service.child.pid))
    await nginx.stop()
    await stopChild(service.child)
  }
  if (!wanted('Caddy + airlock auth, the line')) {
    // not asked for
  } else if (hasCaddy) {
    const service = await auth(true)
    const caddy = await startCaddy((site) =>
      caddyConfig({ origin: `fastcgi:${php!.address}`, service: `127.0.0.1:${service.port}`, serverName: site, root }),
    )
    rows.push(await run('Caddy + airlock auth, the line', caddy.url, true, baseline, unloaded, service.child.pid))
    await caddy.stop()
    await stopChild(service.child)
  } else
    rows.push({
      name: 'Caddy + airlock auth, the line',
      pagesPerSecond: null,
      ofBaseline: '-',
      php5xx: 0,
      crowd: '-',
      p99: null,
      follower: '-',
      note: 'caddy missing',
    })
  if (wanted('airlock proxy --queue in front of nginx')) {
    const cli = new URL('../src/cli.ts', import.meta.url).pathname
    const { child, match } = await start(
      [
        cli,
        'proxy',
        '--target',
        plain.url,
        '--port',
        '0',
        '--limit',
        String(LIMIT),
        '--queue',
        '--pass-ttl',
        `${PASS_TTL / 1000}s`,
        '--log-level',
        'silent',
      ],
      { AIRLOCK_SECRET: SECRET },
      /on (http:\/\/127\.0\.0\.1:\d+)/,
    )
    rows.push(await run('airlock proxy --queue in front of nginx', match[1]!, true, baseline, unloaded, child.pid))
    await stopChild(child)
  }
  await plain.stop()

  console.log(
    `# A PHP site under a hug: nginx + PHP-FPM (4 workers) + SQLite, limit ${LIMIT}\n\n${describeMachine(machine())}`,
  )
  console.log(
    `${BROWSERS} browsers keeping cookies, a crowd of ${CROWD} cookie-less connections from 250 addresses retrying at once for ${SECONDS} s, a follower arriving 3 s in; ` +
      `"x baseline": pages PHP served a second against nginx alone at ${BROWSERS} in flight without a crowd; PHP 5xx: 500/502/504 answers\n`,
  )
  console.log(
    markdownTable(
      ['', 'pages/s', 'x baseline', 'PHP 5xx', 'p99 of pages ms', 'follower got the page', 'crowd answers', ''],
      rows.map((r) => [
        r.name,
        r.pagesPerSecond === null ? '-' : fixed(r.pagesPerSecond, 1),
        r.ofBaseline,
        r.php5xx,
        r.p99 ?? '-',
        r.follower,
        r.crowd,
        r.note ?? '',
      ]),
    ),
  )
  writeResults('php', {
    seconds: SECONDS,
    crowd: CROWD,
    browsers: BROWSERS,
    limit: LIMIT,
    rows: rows.map(({ latencies: _l, ...r }: Row & { latencies?: number[] }) => r),
  })
} finally {
  await Promise.all(children.map(stopChild))
  await php?.stop()
}
