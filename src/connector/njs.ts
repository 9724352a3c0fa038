/**
 * The nginx connector's njs module (Debian's `libnginx-mod-http-js`, njs 0.7.8 or later), written
 * out by `airlock nginx-config --write DIR` as `DIR/airlock.js` beside its settings
 * (`DIR/airlock.json`, read once at configuration load with `js_preload_object`).
 *
 * - `pass(r)` (`js_set $airlock_pass`): `"1"` when the request carries a pass of this gate that is
 *   correctly signed (HMAC-SHA256 under any of the secrets), full (not provisional), and not due
 *   for renewal (more than half of `passTtl` left), and is not one of the waiting room's own
 *   requests (a poll, a solution, `?__airlock=`). Such a request goes to the origin; nothing else
 *   is asked.
 * - `personal(r)` (`js_set $airlock_personal`): `"1"` when the request carries any cookie of the
 *   gate: its answer is its own, never taken from nginx's cache of shared refusals.
 * - `decide(r)` (`js_content`, in the named location `@airlock`): asks the decision service
 *   (`/.airlock/decide`, a subrequest without the body), then continues to `@airlock_origin` with
 *   the cookies it sets, or sends its answer (busy, the waiting room) as it is. When the service
 *   does not answer, `fail` decides: `closed` (default) sends the busy page kept in the settings,
 *   `open` lets the request through.
 *
 * The pass format is src/gate/pass.ts's: `p1~<gate>~<token>~<expiresAt base 36>~<p|f>~<mac>`.
 * Kept to the njs subset of ES5 with `let`-free code, so every njs 0.7 runs it.
 */
import type { Gate } from '../gate/gate.js'
import { renderBusyPage } from '../pages/busy.js'

/** The module's source (one file, no imports but njs's `crypto`). */
export const NJS_MODULE = `// airlock-shield's nginx connector: checks the gate's pass cookie inside nginx (njs).
// Written by \`airlock nginx-config --write\`; its settings are airlock.json (js_preload_object).
var crypto = require('crypto');

function settings() { return airlock_config; }

function cookies(r, name) {
  var header = r.headersIn.Cookie;
  var found = [];
  if (!header) return found;
  var parts = header.split(';');
  for (var i = 0; i < parts.length && i < 256; i++) {
    var part = parts[i];
    var eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) found.push(part.slice(eq + 1).trim());
  }
  return found;
}

function sameText(a, b) {
  if (a.length !== b.length) return false;
  var diff = 0;
  for (var i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

function validPass(value, s, now) {
  // Shape, gate, flag and written expiry first: junk and expired values cost no HMAC.
  if (value.length > 256) return false;
  var f = value.split('~');
  if (f.length !== 6 || f[0] !== 'p1' || f[1] !== s.gate || f[4] !== 'f' || f[2].length === 0 || f[5].length !== 43) return false;
  if (!(parseInt(f[3], 36) - now >= s.passTtl / 2)) return false;
  var payload = 'airlock-pass~' + value.slice(0, value.length - 44);
  var ok = false;
  for (var k = 0; k < s.secrets.length; k++) {
    if (sameText(crypto.createHmac('sha256', s.secrets[k]).update(payload).digest('base64url'), f[5])) ok = true;
  }
  return ok;
}

function ownRequest(r) {
  var h = r.headersIn;
  if (h['X-Airlock-Poll'] !== undefined || h['X-Airlock-Solution'] !== undefined) return true;
  var args = r.variables.args;
  return args !== undefined && args.indexOf('__airlock=') >= 0;
}

function pass(r) {
  var s = settings();
  if (ownRequest(r)) return '';
  var now = Date.now();
  // nginx's own parse of the first cookie of that name: the usual case, no JavaScript parsing.
  var first = r.variables['cookie_' + s.cookie];
  if (!first) return '';
  if (validPass(first, s, now)) return '1';
  // Several cookies of that name (a browser may keep one per path): each one checked.
  var values = cookies(r, s.cookie);
  for (var i = 1; i < values.length; i++) if (validPass(values[i], s, now)) return '1';
  return '';
}

function personal(r) {
  var s = settings();
  var header = r.headersIn.Cookie;
  if (!header) return '';
  var names = [s.cookie, s.ticket, s.ticket + '_door'];
  for (var i = 0; i < names.length; i++) if (cookies(r, names[i]).length > 0) return '1';
  return '';
}

var COPIED = ['Airlock', 'Content-Type', 'Retry-After', 'Cache-Control', 'Content-Language', 'Vary', 'Link',
  'Content-Security-Policy', 'X-Content-Type-Options', 'Referrer-Policy', 'X-Frame-Options', 'Refresh', 'Location'];

function copyCookies(r, reply) {
  var set = reply.headersOut['Set-Cookie'];
  if (set && set.length) r.headersOut['Set-Cookie'] = set;
}

function failed(r) {
  var s = settings();
  if (s.fail === 'open') { r.internalRedirect('@airlock_origin'); return; }
  r.headersOut['Content-Type'] = 'text/html; charset=utf-8';
  r.headersOut['Retry-After'] = String(s.retryAfter);
  r.headersOut['Cache-Control'] = 'no-store';
  r.headersOut['Airlock'] = 'busy; reason=service-unavailable; gate=' + (/^[A-Za-z]/.test(s.gate) ? s.gate : JSON.stringify(s.gate));
  r.return(503, s.busyPage);
}

function decide(r) {
  r.subrequest('/.airlock/decide', { method: 'GET' }, function (reply) {
    var action = reply.headersOut['Airlock-Action'];
    if (action === 'continue') {
      copyCookies(r, reply);
      if (reply.headersOut['Link']) r.headersOut['Link'] = reply.headersOut['Link'];
      r.internalRedirect('@airlock_origin');
      return;
    }
    if (action !== 'answer') { failed(r); return; }
    for (var i = 0; i < COPIED.length; i++) {
      var v = reply.headersOut[COPIED[i]];
      if (v !== undefined) r.headersOut[COPIED[i]] = v;
    }
    copyCookies(r, reply);
    r.return(reply.status, reply.responseText || '');
  });
}

export default { pass, personal, decide };
`

/** The connector's settings for one gate (`airlock.json`): read by the njs module, secret. */
export interface NjsSettings {
  gate: string
  cookie: string
  ticket: string
  passTtl: number
  /** The first signs (at the service), all verify. */
  secrets: string[]
  /** What nginx does when the decision service does not answer. */
  fail: 'closed' | 'open'
  retryAfter: number
  /** The page nginx sends itself when it fails closed (`503`). */
  busyPage: string
}

/** The settings a gate's connector needs: its name, cookies, pass life, secrets. */
export function njsSettings(
  gate: Pick<Gate, 'name' | 'cookieName' | 'ticketCookieName' | 'passTtl' | 'retryAfter'>,
  secrets: string[],
  fail: 'closed' | 'open',
): NjsSettings {
  return {
    gate: gate.name,
    cookie: gate.cookieName,
    ticket: gate.ticketCookieName,
    passTtl: gate.passTtl,
    secrets,
    fail,
    retryAfter: gate.retryAfter,
    busyPage: renderBusyPage(gate.retryAfter),
  }
}
