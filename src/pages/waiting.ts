import { BASE_STYLE, escapeHtml, inlineHashes, pageCsp } from './csp.js'
import { ENGLISH, type PageLanguage, type VisitorLanguage } from './language.js'
import { LEAVE_QUERY } from './left.js'

/** What the waiting page (built-in or custom) is rendered from. */
export interface WaitingPageContext {
  /** `'fifo'`: show the place in line. `'random'`: a lottery, show how many are waiting. */
  order: 'fifo' | 'random'
  /** 1-based place in line (`null` in random order). */
  position: number | null
  /** Visitors in line, this one included. */
  waiting: number
  /** Estimated wait in seconds, `null` while no admission rate is known (and in random order). */
  eta: number | null
  /**
   * A scheduled opening not yet reached (ms since the epoch): the line is a pre-queue, `eta` counts
   * down to the opening, and places are drawn at random then (`position` is `null`). Else `null`.
   */
  opensAt: number | null
  /** How often the page polls while visible (ms). */
  pollInterval: number
  /** How often it polls while the tab is hidden, only to keep its place (ms). */
  keepAliveInterval: number
  /** The framework's request object (Fastify `request`, Express `req`). */
  request: unknown
  /** The CSP nonce from the gate's `nonce` option, if any. */
  nonce: string | undefined
  /**
   * The visitor's language, negotiated from `Accept-Language` over the gate's catalogue (English
   * when none fits): `tag` and `dir` for `<html>`, `number()`, `duration()` and `eta()` to format
   * the place and the wait, `messages` for the built-in words. The answer carries
   * `Content-Language: <tag>` and `Vary: Accept, Accept-Language`.
   */
  language: VisitorLanguage
}

/** A custom waiting page: a function of the visitor's place returning HTML. */
export type WaitingPage = (context: WaitingPageContext) => string

/**
 * The built-in page's script. Every poll interval (jittered to 0.75x..1.25x so a crowd's polls
 * spread out) it asks the same URL for JSON with `X-Airlock-Poll: 1` and updates the place, the
 * count and the estimate; while the tab is hidden it only polls at the keep-alive interval (to keep
 * its place) and polls at once when shown again. Any answer other than 202 (admitted: 200; busy:
 * 503) loads the page again, as a GET; so does the first answer after a scheduled opening (the
 * countdown page becomes the page with the place in line). Static (the same in every language), so
 * it can be allowed by hash: settings and words come from the `data-` attributes of `#q`
 * (`data-about`: the estimate with `{time}`, `data-unknown`: the estimate while unknown,
 * `data-turn`: the words of the tab's title once admitted), numbers and durations are formatted by
 * `Intl` in the page's `lang`.
 *
 * Admitted while the tab is hidden (the poll's `{"status":"admitted","hold":ms}`), it stays: the
 * title becomes `✓ <turn> – <host>` and the favicon a green check mark (a `data:` SVG), the pass is
 * confirmed at once (`?__airlock=confirm`: the slot is then held for `passTtl`, as for any admitted
 * visitor), and the page goes to the site when the tab is shown again, or by itself after `hold`
 * ms (half the pass's life) so that the pass is used before it lapses. Without `hold` (the gate's
 * `confirm` is off), or in a visible tab, it goes at once. The "Tell me when it is my turn" toggle
 * (`#n`, shown by the script) asks for permission to notify on its click and makes an audio
 * context in that same click: when the visitor opted in, the admission in a hidden tab shows a
 * Notification (clicking it brings the tab to the front) or, when notifications are refused or
 * unavailable, plays a short beep. No sound and no notification without that click.
 */
export const WAITING_PAGE_SCRIPT =
  '(function(){var d=document,l=location,q=d.getElementById("q"),D=q.dataset,P=+D.poll||2e3,K=+D.keep||1e4,L=d.documentElement.lang||"en",B=d.getElementById("n"),t,A,S,W,N,C;' +
  'function go(){l.replace(l.href.split("#")[0])}' +
  'function f(v,o){try{return new Intl.NumberFormat(L,o).format(v)}catch(x){return""+v}}' +
  'function put(i,v){var e=d.getElementById(i);if(e&&v!=null&&e.textContent!=String(v))e.textContent=v}' +
  'function eta(s){var m=s>=60;return s==null?D.unknown:D.about.replace("{time}",f(m?Math.round(s/60):s,{style:"unit",unit:m?"minute":"second",unitDisplay:"long"}))}' +
  'function next(){clearTimeout(t);if(!S)t=setTimeout(poll,(d.hidden?K:P)*(.75+Math.random()/2))}' +
  // Admitted in a hidden tab: say so (title, favicon, the opted-in notification or beep), keep the pass, go when shown.
  'function won(j){if(!d.hidden||!j.hold)return go();W=S=1;var T=d.title="\u2713 "+D.turn+" \u2013 "+l.hostname,i=d.createElement("link");' +
  "i.rel=\"icon\";i.href=\"data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 2 2'><circle cx='1' cy='1' r='1' fill='green'/></svg>\";" +
  'd.head.appendChild(i);if(N)try{if(Notification.permission!="granted")throw 0;new Notification(T).onclick=function(){focus()}}' +
  'catch(x){try{var o=C.createOscillator(),g=C.createGain();g.gain.value=.2;o.connect(g).connect(C.destination);o.start();o.stop(C.currentTime+.3)}catch(y){}}' +
  'fetch("?__airlock=confirm").catch(go);setTimeout(go,j.hold)}' +
  'function poll(){clearTimeout(t);if(W)return go();if(S)return;A=new AbortController();fetch(l.href,{headers:{Accept:"application/json","X-Airlock-Poll":"1"},' +
  'cache:"no-store",signal:A.signal}).then(function(r){var s=r.status;if(s!=202)return s==200?r.json().then(won,go):go();' +
  'return r.json().then(function(j){if(D.opens&&!j.opensAt)return go();' +
  'put("p",j.position==null?null:f(j.position));put("w",f(j.waiting));put("e",eta(j.eta));next()})}).catch(next)}' +
  // The opt-in: its click asks for the permission and makes the audio context (browsers allow both only in a click).
  'if(B){B.hidden=!1;B.onclick=function(){B.setAttribute("aria-pressed",N=!N);try{C=C||new AudioContext}catch(x){}if(N&&window.Notification)Notification.requestPermission()}}' +
  // Leaving: no poll after the form is sent (one arriving after the leave would take a new place).
  'd.forms[0].addEventListener("submit",function(){S=1;clearTimeout(t);if(A)A.abort()});' +
  'd.addEventListener("visibilitychange",function(){if(!d.hidden)poll()});next()})()'

/** The built-in page's style. Static, so it can be allowed by hash. */
export const WAITING_PAGE_STYLE = `${BASE_STYLE}b{font-size:1.4em}`

/**
 * CSP sources that allow the built-in waiting page's inline script and style, for a site whose own
 * policy also applies: add `waitingPageHashes.script` to `script-src`, `waitingPageHashes.style` to
 * `style-src`, and allow `connect-src 'self'` (the page polls its own URL), or use the `nonce` option.
 */
export const waitingPageHashes = inlineHashes(WAITING_PAGE_SCRIPT, WAITING_PAGE_STYLE)

/**
 * The policy sent with the built-in page: its own script and style, polls (and the confirm request)
 * to its own origin, the leave form to its own origin, and the `data:` favicon it shows once admitted.
 */
export const WAITING_PAGE_CSP = pageCsp(waitingPageHashes, "connect-src 'self'; img-src data:; ").replace(
  "form-action 'none'",
  "form-action 'self'",
)

/** An estimated wait for people: `about 31 seconds`, `about 4 minutes`, or `working it out` while unknown (in `language`). */
export function describeEta(seconds: number | null, language: PageLanguage = ENGLISH): string {
  return language.eta(seconds)
}

/**
 * The built-in waiting page (about 3.3 KB, under 4 KB in every built-in language, no external assets) in `language` (default English): the
 * place in line (or, in random order, how many are waiting) and the estimated wait, updated live by
 * {@link WAITING_PAGE_SCRIPT}. Without JavaScript, a `<noscript>` meta refresh reloads it every
 * poll interval (plus up to a second of jitter), which also keeps the place.
 */
export function renderWaitingPage(
  context: Omit<WaitingPageContext, 'request' | 'opensAt' | 'language'> & { opensAt?: number | null },
  language: PageLanguage = ENGLISH,
): string {
  const l = language
  const opensAt = context.opensAt ?? null
  const n = context.nonce === undefined ? '' : ` nonce="${escapeHtml(context.nonce)}"`
  const noJsDelay = Math.ceil(context.pollInterval / 1000) + Math.floor(Math.random() * 2)
  const eta = escapeHtml(l.eta(context.eta))
  const place =
    opensAt !== null
      ? `<p>${l.html('opensIn', { eta: `<b id="e">${eta}</b>`, time: escapeHtml(l.date(opensAt)) })}</p>` +
        `<p>${l.html('openingDraw')} ${l.html('openingWaiting', { waiting: `<span id="w">${l.number(context.waiting)}</span>` })}</p>`
      : context.order === 'fifo' && context.position !== null
        ? `<p>${l.html('place', { position: `<b id="p">${l.number(context.position)}</b>`, waiting: `<span id="w">${l.number(context.waiting)}</span>` })}</p>` +
          `<p>${l.html('eta', { eta: `<span id="e">${eta}</span>` })}</p>`
        : `<p>${l.html('lottery', { waiting: `<b id="w">${l.number(context.waiting)}</b>` })}</p>`
  const title = l.html(opensAt !== null ? 'openingSoon' : 'inLine')
  return (
    `<!doctype html><html${l.htmlAttributes}><head><meta charset="utf-8">` +
    '<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">' +
    `<title>${title}</title>` +
    `<noscript><meta http-equiv="refresh" content="${noJsDelay}"></noscript>` +
    `<style${n}>${WAITING_PAGE_STYLE}</style></head><body>` +
    `<main id="q" data-poll="${context.pollInterval}" data-keep="${context.keepAliveInterval}"${opensAt !== null ? ' data-opens="1"' : ''} ` +
    `data-about="${l.html('etaAbout')}" data-unknown="${l.html('etaUnknown')}" data-turn="${l.html('turn')}">` +
    `<h1>${title}</h1>` +
    // A screen reader hears a new place or wait once, when it changes (the script writes only changes).
    `<div aria-live="polite">${place}</div>` +
    `<p>${l.html('keepOpen')}</p>` +
    // The opt-in (a toggle, shown by the script: it needs JavaScript) before the way out.
    `<form method="post" action="${LEAVE_QUERY}"><button type="button" id="n" aria-pressed="false" hidden>${l.html('notify')}</button> ` +
    `<button>${l.html('leave')}</button></form>` +
    `</main><script${n}>${WAITING_PAGE_SCRIPT}</script></body></html>`
  )
}

/** The JSON body of a queued answer (`eta` in seconds, like `Retry-After`). */
export function queuedJson(
  position: number | null,
  waiting: number,
  eta: number | null,
  opensAt: number | null = null,
): string {
  const opening = opensAt === null ? '' : `,"opensAt":"${new Date(opensAt).toISOString()}"`
  return `{"status":"queued","position":${position},"eta":${eta},"waiting":${waiting}${opening}}`
}

/** The JSON body the gate answers a waiting page's poll with once the visitor is admitted. */
export const ADMITTED_JSON = '{"status":"admitted"}'

/**
 * The admitted poll's body when the page may stay on a hidden tab (`hold` ms, after confirming the
 * pass) before it goes to the site: `{"status":"admitted","hold":30000}`. Without `hold`, {@link ADMITTED_JSON}.
 */
export function admittedJson(hold: number | undefined): string {
  return hold === undefined ? ADMITTED_JSON : `{"status":"admitted","hold":${hold}}`
}
