/**
 * The proxy configurations `airlock nginx-config` and `airlock caddy-config` print: a complete,
 * commented server block in front of an origin (PHP-FPM by FastCGI, or any HTTP origin), with the
 * decision service (`airlock auth`) asked for every request without a valid pass.
 */
import { optionError } from '../base/errors.js'
import { received } from '../base/validate.js'

/** Where the site's requests go once admitted. */
export type Origin = { kind: 'fastcgi'; address: string } | { kind: 'http'; url: string }

export interface ConnectorConfigOptions {
  /** `fastcgi:unix:/run/php/php8.2-fpm.sock`, `fastcgi:127.0.0.1:9000`, or `http://127.0.0.1:8080`. */
  origin: string
  /** The decision service, `127.0.0.1:8787`. */
  service: string
  /** `server_name` / the Caddy site address. Default `_` (nginx) / `:80` (Caddy). */
  serverName?: string
  /** What nginx listens on. Default `80`. */
  listen?: string
  /** The document root (FastCGI origins: PHP files and static files). Default `/var/www/html`. */
  root?: string
  /** Where airlock.js and airlock.json are (nginx). Default `/etc/nginx/airlock`. */
  dir?: string
  /** nginx's cache of shared refusals. Default `/var/cache/nginx/airlock`. */
  cacheDir?: string
  /** `njs` (default: passes checked in nginx) or `auth_request` (every gated request asks the service). */
  check?: 'njs' | 'auth_request'
  /** When the service does not answer: `closed` (default: nginx's own busy page, 503) or `open`. */
  fail?: 'closed' | 'open'
  /** Path prefixes served without the gate (HTTP origins; FastCGI sites: static files are never gated). */
  bypass?: string[]
  /** Serve the service's dashboard through the proxy at this path (it keeps its own token). */
  dashboard?: string
}

/** Parses an origin option (`ERR_AIRLOCK_OPTION` naming the forms). */
export function parseOrigin(text: unknown): Origin {
  if (
    typeof text === 'string' &&
    text.startsWith('fastcgi:') &&
    /^(unix:\/[^\s;{}]+|[A-Za-z0-9.[\]:-]+:\d+)$/.test(text.slice(8))
  ) {
    return { kind: 'fastcgi', address: text.slice(8) }
  }
  if (typeof text === 'string' && /^https?:\/\/[A-Za-z0-9.[\]:-]+(:\d+)?\/?$/.test(text))
    return { kind: 'http', url: text.replace(/\/$/, '') }
  return optionError(
    `origin must be fastcgi:unix:/run/php/php8.2-fpm.sock, fastcgi:127.0.0.1:9000 or http://127.0.0.1:8080, got ${received(text)}`,
  )
}

function checked(
  o: ConnectorConfigOptions,
): Required<Omit<ConnectorConfigOptions, 'dashboard'>> & { dashboard: string | undefined; parsed: Origin } {
  const parsed = parseOrigin(o.origin)
  if (typeof o.service !== 'string' || !/^[A-Za-z0-9.[\]:-]+:\d+$/.test(o.service))
    optionError(`service must be HOST:PORT (127.0.0.1:8787), got ${received(o.service)}`)
  for (const p of o.bypass ?? [])
    if (!/^\/[A-Za-z0-9._~/-]*$/.test(p))
      optionError(`bypass must be path prefixes such as /static, got ${received(p)}`)
  if (o.dashboard !== undefined && !/^\/[A-Za-z0-9._~-]+$/.test(o.dashboard))
    optionError(`dashboard must be a path such as /airlock, got ${received(o.dashboard)}`)
  for (const [k, v] of [
    ['root', o.root],
    ['dir', o.dir],
    ['cacheDir', o.cacheDir],
  ] as const) {
    if (v !== undefined && !/^\/[^\s;{}'"$]*$/.test(v))
      optionError(`${k} must be an absolute path without spaces, quotes, ';', '{', '}' or '$', got ${received(v)}`)
  }
  return {
    origin: o.origin,
    service: o.service,
    serverName: o.serverName ?? '_',
    listen: o.listen ?? '80',
    root: o.root ?? '/var/www/html',
    dir: o.dir ?? '/etc/nginx/airlock',
    cacheDir: o.cacheDir ?? '/var/cache/nginx/airlock',
    check: o.check ?? 'njs',
    fail: o.fail ?? 'closed',
    bypass: o.bypass ?? [],
    dashboard: o.dashboard,
    parsed,
  }
}

/** `HOST:PORT` of an HTTP origin (80 or 443 when it names none). */
function originAddress(url: string): string {
  const u = new URL(url)
  return `${u.hostname}:${u.port || (u.protocol === 'https:' ? 443 : 80)}`
}

/** The origin's directives, indented for a location. */
function originLines(origin: Origin, indent: string): string {
  if (origin.kind === 'fastcgi') {
    return [
      `include fastcgi.conf;  # Debian's: SCRIPT_FILENAME and the CGI parameters`,
      `fastcgi_pass ${origin.address};`,
    ]
      .map((l) => indent + l)
      .join('\n')
  }
  return [
    `proxy_pass ${origin.url.startsWith('https:') ? 'https' : 'http'}://airlock_origin;`,
    'proxy_http_version 1.1;',
    'proxy_set_header Connection "";',
    'proxy_set_header Host $host;',
    'proxy_set_header X-Forwarded-For $remote_addr;',
    'proxy_set_header X-Forwarded-Proto $scheme;',
  ]
    .map((l) => indent + l)
    .join('\n')
}

/** The pace of requests without a valid pass, per client address (nginx's limit_req). */
const PACE_RATE = 5
const PACE_BURST = 50

/** The headers every request to the decision service carries: who asked, for what. */
const SERVICE_HEADERS = `        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_pass_request_body off;
        proxy_set_header Content-Length "";
        proxy_set_header Host $host;
        proxy_set_header X-Original-URI $request_uri;
        proxy_set_header X-Original-Method $request_method;
        proxy_set_header X-Forwarded-For $remote_addr;
        proxy_set_header X-Forwarded-Proto $scheme;`

/** An nginx configuration file (for `conf.d/` or `sites-enabled/`: read inside `http {}`). */
export function nginxConfig(options: ConnectorConfigOptions): string {
  const o = checked(options)
  const php = o.parsed.kind === 'fastcgi'
  const njs = o.check === 'njs'
  const gatedLocation = php ? '~ \\.php$' : '/'
  const head = `# airlock-shield in front of ${o.origin}: written by \`airlock nginx-config\`.
# Every request that would reach ${php ? 'PHP' : 'the origin'} is checked first: ${njs ? `a visitor with a valid pass\n# (checked here by njs, no other process asked) goes straight through; anyone else asks the\n# decision service (airlock auth on ${o.service}), which admits, refuses or queues.` : `nginx asks the decision service\n# (airlock auth on ${o.service}) with auth_request; its answer pages come from the service too.`}
# ${php ? 'Static files are served by nginx and never gated.' : 'Paths given with --bypass are never gated.'}
# Needs: ${njs ? "Debian's libnginx-mod-http-js (njs 0.7.8+), " : ''}airlock auth running${njs ? `, and ${o.dir}/airlock.js + airlock.json\n# (airlock nginx-config --write ${o.dir})` : ''}.

upstream airlock_service {
    server ${o.service};
    keepalive 32;
}
${o.parsed.kind === 'http' ? `\n# The origin, its connections kept open.\nupstream airlock_origin {\n    server ${originAddress(o.parsed.url)};\n    keepalive 64;\n}\n` : ''}${
  njs
    ? `
js_import airlock from ${o.dir}/airlock.js;
js_preload_object airlock_config from ${o.dir}/airlock.json;
js_set $airlock_pass airlock.pass;
js_set $airlock_personal airlock.personal;
# Requests without a valid pass, per client address: ${PACE_RATE} a second, ${PACE_BURST} more waiting.
limit_req_zone $binary_remote_addr zone=airlock_newcomers:10m rate=${PACE_RATE}r/s;
# A refusal that is everyone's (the site is full) is kept a second: a crowd's retries cost nginx.
# (njs's subrequests are read in memory, which nginx never caches: this small server on a unix
# socket does, between them and the service.)
proxy_cache_path ${o.cacheDir} levels=1 keys_zone=airlock_refusals:1m max_size=16m inactive=60s use_temp_path=off;
upstream airlock_cache {
    server unix:${o.cacheDir}.sock;
    keepalive 32;
}
server {
    listen unix:${o.cacheDir}.sock;
    access_log off;
    location / {
        proxy_pass http://airlock_service;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_connect_timeout 1s;
        proxy_read_timeout 2s;
        proxy_cache airlock_refusals;
        proxy_cache_key "$http_accept_language|$http_accept";
        proxy_cache_lock on;
        proxy_cache_lock_timeout 1s;
        proxy_no_cache $airlock_personal;
        proxy_cache_bypass $airlock_personal;
    }
}
`
    : ''
}`
  const gateLines = njs
    ? `        # No valid pass: ask airlock (the location below), else straight to the origin.
        error_page 418 = @airlock;
        recursive_error_pages on;
        if ($airlock_pass = "") { return 418; }`
    : `        # Every request asks airlock; a refusal's page is fetched from it (@airlock_answer).
        auth_request /.airlock/auth-request;
        auth_request_set $airlock_cookie_1 $upstream_http_airlock_cookie_1;
        auth_request_set $airlock_cookie_2 $upstream_http_airlock_cookie_2;
        auth_request_set $airlock_link $upstream_http_link;
        auth_request_set $airlock_answer $upstream_http_airlock_answer;
        add_header Set-Cookie $airlock_cookie_1 always;
        add_header Set-Cookie $airlock_cookie_2 always;
        add_header Link $airlock_link always;
        error_page 401 = @airlock_answer;
        # The service down or slow (auth_request then fails with 500): ${o.fail === 'open' ? 'let the visitor through (fail open).' : "nginx's own busy page."}
        error_page 500 ${o.fail === 'open' ? '= @airlock_origin' : '=503 /.airlock/busy.html'};`
  const php404 = php ? '        try_files $uri =404;\n' : ''
  const service = njs
    ? `    # The njs module's question to the service (a subrequest, no body), through the cache below.
    location = /.airlock/decide {
        internal;
        proxy_pass http://airlock_cache;
${SERVICE_HEADERS}
        proxy_read_timeout 3s;
        subrequest_output_buffer_size 64k;
    }

    # No valid pass. Each client address is paced here (a crowd that retries at once waits in
    # nginx, costing nothing; a person, even behind a shared address, never notices).
    location @airlock {
        limit_req zone=airlock_newcomers burst=${PACE_BURST};
        limit_req_status 503;
        limit_req_log_level info;
        error_page 503 /.airlock/busy.html;
        js_content airlock.decide;
    }
`
    : `    location = /.airlock/auth-request {
        internal;
        proxy_pass http://airlock_service;
${SERVICE_HEADERS}
        proxy_connect_timeout 1s;
        proxy_read_timeout 2s;
    }

    # A refusal: the service's answer for this request, kept by it under the id it gave.
    location @airlock_answer {
        rewrite ^ /.airlock/answer/$airlock_answer? break;
        proxy_method GET;
        proxy_pass http://airlock_service;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_pass_request_body off;
        proxy_set_header Content-Length "";
    }
`
  const busyPage = `    # nginx's own busy page (airlock.json's, written by --write): the service down, or a client over its pace.
    location = /.airlock/busy.html {
        internal;
        alias ${o.dir}/busy.html;
        default_type text/html;
        add_header Retry-After 5 always;
        add_header Cache-Control no-store always;
        add_header Airlock "busy; reason=${njs ? 'client-rate' : 'service-unavailable'}" always;
    }
`
  const bypass = o.bypass.map((p) => `    location ^~ ${p} {\n${originLines(o.parsed, '        ')}\n    }\n`).join('\n')
  const dashboard =
    o.dashboard === undefined
      ? ''
      : `    # The operator's dashboard (its own token), served by the decision service.
    location ^~ ${o.dashboard} {
        proxy_pass http://airlock_service;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $remote_addr;
        proxy_set_header X-Forwarded-Proto $scheme;
    }
`
  return `${head}
server {
    listen ${o.listen};
    server_name ${o.serverName};
${php ? `    root ${o.root};\n    index index.php index.html;\n\n    # Static files straight from disk; anything else to WordPress/Laravel's front controller.\n    location / {\n        try_files $uri $uri/ /index.php?$args;\n    }\n` : ''}
    location ${gatedLocation} {
${php404}${gateLines}
${originLines(o.parsed, '        ')}
    }

    # Admitted just now (a new pass, set by the service): on to the origin.
    location @airlock_origin {
${originLines(o.parsed, '        ')}
    }

${service}${njs || o.fail === 'closed' ? `\n${busyPage}` : ''}${bypass}${dashboard}}
`
}

/** A Caddyfile site block (Caddy 2.5+: forward_auth's pieces, with the pass cookies kept). */
export function caddyConfig(options: ConnectorConfigOptions): string {
  const o = checked(options)
  if (o.fail === 'open')
    optionError(
      "fail: 'open' is for nginx; behind Caddy the service's outage is a 503 (a busy page the browser retries)",
    )
  const php = o.parsed.kind === 'fastcgi'
  const site = o.serverName === '_' ? ':80' : o.serverName
  const origin = php
    ? `php_fastcgi ${o.parsed.kind === 'fastcgi' && o.parsed.address.startsWith('unix:') ? `unix/${o.parsed.address.slice(5)}` : (o.parsed as { address: string }).address}`
    : `reverse_proxy ${(o.parsed as { url: string }).url}`
  const unGated = php
    ? '    @static {\n        file\n        not path *.php\n    }\n    handle @static {\n        file_server\n    }\n'
    : o.bypass.map((p) => `    handle ${p}* {\n        ${origin}\n    }\n`).join('')
  return `# airlock-shield in front of ${o.origin}: written by \`airlock caddy-config\`.
# Every request that would reach ${php ? 'PHP' : 'the origin'} asks the decision service (airlock auth on
# ${o.service}); a 'continue' goes on with the cookies it sets, anything else is its answer
# (busy page, waiting room) sent as it is. Caddy has no pass check of its own: pass holders ask too.
${site} {
${php ? `    root * ${o.root}\n` : ''}${unGated}
    handle {
        reverse_proxy ${o.service} {
            method GET
            rewrite /.airlock/decide
            header_up X-Forwarded-Method {method}
            header_up X-Forwarded-Uri {uri}
            # Connections to the service kept open: a crowd's questions would otherwise open and
            # close one each, and run out of loopback ports.
            transport http {
                keepalive_idle_conns 1024
                keepalive_idle_conns_per_host 1024
            }
            @two {
                header Airlock-Action continue
                header Airlock-Cookie-2 *
            }
            handle_response @two {
                header +Set-Cookie "{rp.header.Airlock-Cookie-1}"
                header +Set-Cookie "{rp.header.Airlock-Cookie-2}"
            }
            @one {
                header Airlock-Action continue
                header Airlock-Cookie-1 *
            }
            handle_response @one {
                header +Set-Cookie "{rp.header.Airlock-Cookie-1}"
                header ?Link "{rp.header.Link}"
            }
            @continue header Airlock-Action continue
            handle_response @continue {
                header -Airlock-Action
            }
        }
        ${origin}
    }

    # The service down or slow: a busy answer the visitor's browser retries by itself.
    handle_errors {
        @down expression {err.status_code} in [502, 503, 504]
        handle @down {
            header Retry-After 5
            header Cache-Control no-store
            header Airlock "busy; reason=service-unavailable"
            respond "The site is busy. Try again in a few seconds." 503
        }
    }
}
`
}
