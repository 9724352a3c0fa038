import { BASE_STYLE, escapeHtml, inlineHashes, pageCsp } from './csp.js'
import { ENGLISH, type PageLanguage } from './language.js'

/** The request header carrying a solution: `<challenge> <nonce>` (see src/gate/challenge.ts). */
export const SOLUTION_HEADER = 'x-airlock-solution'

/**
 * The solver, a JavaScript function expression `G=>{...}` (`G`: the global object) that
 * returns `{ sha, solve }` and, in a worker (no `G.document`), also answers messages. Plain
 * JavaScript, no WebCrypto: `crypto.subtle.digest` is asynchronous, and its cost per call made it
 * about 4x slower than this loop in Chromium (one worker: 65k against 264k tries a second in
 * bench/challenge.ts, which measures both; 256 to 4,096 digests per `Promise.all` did not close the
 * gap); it also needs a secure context, and this runs anywhere.
 *
 * - `sha(s)`: the SHA-256 of the byte string `s` (each character 0..255) as 8 32-bit words, big
 *   endian (FIPS 180-4; the constants are computed from the primes, not listed).
 * - `solve(c, d, i, k, tell, done, later)`: tries the counters i, i + k, i + 2k, ... until
 *   SHA-256(`c:n`) starts with `d` zero bits (1 ≤ d ≤ 32, so only the first word is looked at),
 *   in chunks of about 50 ms; `tell(tries)` reports each chunk's tries, `done(n)` the answer,
 *   `later(next)` schedules the next chunk. Each try hashes only the last block or two: the
 *   state after the challenge's whole 64-byte blocks is computed once. `c` must be ASCII (a
 *   challenge is).
 * - In a worker: the message `{ c, d, i, k }` starts a solve; it posts minus the tries after each
 *   chunk (a negative number) and the nonce (a non-negative number) at the end.
 */
export const CHALLENGE_SOLVER =
  'G=>{var K=[],I=new Int32Array(8),X=new Int32Array(64),p=2,q,i=0,R=(x,n)=>x>>>n|x<<32-n,Q=x=>x%1*2**32|0;' +
  // K: cube roots of the first 64 primes, I: square roots of the first 8 (fractional parts' first 32 bits).
  'for(;i<64;p++){for(q=2;q*q<=p&&p%q;q++);if(q*q>p){if(i<8)I[i]=Q(Math.sqrt(p));K[i++]=Q(Math.cbrt(p))}}' +
  // B(h, w): compresses the 16-word blocks of w into the state h.
  'function B(h,w){for(var j=0;j<w.length;j+=16){var a=h[0],b=h[1],c=h[2],d=h[3],e=h[4],f=h[5],g=h[6],k=h[7],r,t,u;' +
  'for(r=0;r<64;r++){X[r]=r<16?w[j+r]:(R(t=X[r-15],7)^R(t,18)^t>>>3)+(R(u=X[r-2],17)^R(u,19)^u>>>10)+X[r-7]+X[r-16]|0;' +
  't=k+(R(e,6)^R(e,11)^R(e,25))+(e&f^~e&g)+K[r]+X[r]|0;u=(R(a,2)^R(a,13)^R(a,22))+(a&b^a&c^b&c)|0;' +
  'k=g;g=f;f=e;e=d+t|0;d=c;c=b;b=a;a=t+u|0}' +
  '[a,b,c,d,e,f,g,k].map((v,i)=>h[i]+=v)}return h}' +
  // W(s, n): a byte string's first n big-endian words. H(s, h, o): the digest of the byte string s,
  // continuing the state h after o bytes (a multiple of 64).
  'function W(s,n){for(var w=new Int32Array(n),i=0;i<s.length;i++)w[i>>2]|=s.charCodeAt(i)<<24-i%4*8;return w}' +
  'function H(s,h,o){var l=s.length,n=l+72>>6<<4,w=W(s,n);w[l>>2]|=128<<24-l%4*8;w[n-1]=(l+o)*8;return B(h.slice(),w)}' +
  'function solve(c,d,n,k,tell,done,later){var P=c+":",f=P.length&-64,M=B(I.slice(),W(P,f/4)),T=P.slice(f),L=2**(32-d);' +
  'function run(){for(var e=Date.now()+50,j=0;Date.now()<e;)for(var m=0;m<500;m++,j++,n+=k)if(H(T+n,M,f)[0]>>>0<L)return done(n);' +
  'tell(j);later(run)}run()}' +
  'if(!G.document)G.onmessage=m=>{m=m.data;solve(m.c,m.d,m.i,m.k,t=>G.postMessage(-t),n=>G.postMessage(n),queueMicrotask)};' +
  'return{sha:s=>H(s,I,0),solve}}'

/** The worker's whole source, as the page builds it into a Blob: the solver run on the worker's global. */
export const CHALLENGE_WORKER_SCRIPT = `(${CHALLENGE_SOLVER})(self)`

/**
 * The challenge page's script (static, the same in every language, allowed by hash; settings and
 * words come from the `data-` attributes of `#c`, the status line: `data-progress` with
 * `{percent}`, formatted by `Intl` in the page's `lang`, and `data-done`). The flow:
 * 1. It starts one Web Worker per core (at most 4) from a Blob of {@link CHALLENGE_WORKER_SCRIPT}
 *    (built from the solver's own text, so the solver is in the page once); worker i of k tries
 *    the counters i, i + k, ... Without Worker support (or if a worker fails) it solves on the
 *    page itself, chunks of about 50 ms with `setTimeout` between them, so the page stays responsive.
 * 2. It shows the progress in the status line at most once a second: the chance it would have
 *    found an answer by now, so never 100 % before it has.
 * 3. With the first nonce found it stops the workers and asks the same URL again, `fetch('')` with
 *    `X-Airlock-Solution: <challenge> <nonce>` (and the cookies, same origin): the gate verifies
 *    it and grants the place (the ticket cookie that came with this page now names a place).
 * 4. Whatever the answer, it then loads the page again (`location.reload()`): the gate shows the
 *    waiting page, or a fresh challenge if the solution was refused.
 */
export const CHALLENGE_PAGE_SCRIPT =
  `(()=>{var F=${CHALLENGE_SOLVER},s=document.getElementById("c"),c=s.dataset.challenge,d=+s.dataset.difficulty,` +
  'a=Date.now(),N=0,k=Math.min(navigator.hardwareConcurrency||1,4),V=[],z,i,w,u;' +
  'function tell(t){N+=t;if(Date.now()-a>1e3){a=Date.now();s.textContent=s.dataset.progress.replace("{percent}",' +
  'new Intl.NumberFormat(document.documentElement.lang,{style:"percent"}).format((100-100*Math.exp(-N/2**d)|0)/100))}}' +
  'function stop(){V&&V.map(w=>w.terminate());V=0}' +
  'function here(){if(V){stop();F(window).solve(c,d,0,1,tell,done,setTimeout)}}' +
  'function go(){location.reload()}' +
  'function done(n){if(!z){z=1;stop();s.textContent=s.dataset.done;' +
  'fetch("",{headers:{"X-Airlock-Solution":c+" "+n}}).then(go,go)}}' +
  'try{u=URL.createObjectURL(new Blob(["("+F+")(self)"],{type:"text/javascript"}));' +
  'for(i=0;i<k;i++){V.push(w=new Worker(u));w.onmessage=m=>(m=m.data)<0?tell(-m):done(m);' +
  'w.onerror=here;w.postMessage({c,d,i,k})}}catch(x){here()}})()'

/** The challenge page's style. Static, so it can be allowed by hash. */
export const CHALLENGE_PAGE_STYLE = BASE_STYLE

/**
 * CSP sources that allow the challenge page's inline script and style, for a site whose own
 * policy also applies: add `challengePageHashes.script` to `script-src`, `.style` to `style-src`,
 * and allow `connect-src 'self'` (the solution goes to the page's own URL) and `worker-src blob:`
 * (the solver's worker), or use the `nonce` option.
 */
export const challengePageHashes = inlineHashes(CHALLENGE_PAGE_SCRIPT, CHALLENGE_PAGE_STYLE)

/** The policy sent with the challenge page: its own script and style, its worker, requests to its own origin. */
export const CHALLENGE_PAGE_CSP = pageCsp(challengePageHashes, "connect-src 'self'; worker-src blob:; ")

/** What the challenge page is rendered from. */
export interface ChallengePageContext {
  /** The signed challenge. */
  challenge: string
  /** Leading zero bits asked for. */
  difficulty: number
  /** After how long (ms) a visitor without JavaScript joins the line: the page reloads itself then. */
  noscriptDelay: number
  /** The CSP nonce from the gate's `nonce` option, if any. */
  nonce: string | undefined
}

/**
 * The challenge page (under 3.5 KB, no external assets, no puzzle for the visitor) in `language`
 * (default English): a status line that {@link CHALLENGE_PAGE_SCRIPT} updates while the browser
 * works, then the waiting page. Without JavaScript, a `<noscript>` meta refresh reloads it after
 * `noscriptDelay`, when the gate lets the visitor into the line.
 */
export function renderChallengePage(context: ChallengePageContext, language: PageLanguage = ENGLISH): string {
  const l = language
  const n = context.nonce === undefined ? '' : ` nonce="${escapeHtml(context.nonce)}"`
  const seconds = Math.ceil(context.noscriptDelay / 1000)
  return (
    `<!doctype html><html${l.htmlAttributes}><head><meta charset="utf-8">` +
    '<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">' +
    `<title>${l.html('momentTitle')}</title><noscript><meta http-equiv="refresh" content="${seconds}"></noscript>` +
    `<style${n}>${CHALLENGE_PAGE_STYLE}</style></head><body>` +
    `<main><h1>${l.html('momentTitle')}</h1><p>${l.html('checkingIntro')}</p>` +
    `<p id="c" role="status" aria-live="polite" data-challenge="${escapeHtml(context.challenge)}" ` +
    `data-difficulty="${Number(context.difficulty)}" data-progress="${l.html('checkingProgress')}" data-done="${l.html('joining')}">${l.html('checking')}</p>` +
    `<noscript><p>${l.html('noscriptJoin', { seconds: l.number(seconds) })}</p></noscript>` +
    `</main><script${n}>${CHALLENGE_PAGE_SCRIPT}</script></body></html>`
  )
}

/**
 * The JSON body of a challenge answer (status 202) for API clients: solve it, then send the same
 * request again with the `X-Airlock-Solution` header (and the cookies of this answer).
 */
export function challengeJson(challenge: string, difficulty: number, expiresAt: number): string {
  return JSON.stringify({
    status: 'challenge',
    challenge,
    difficulty,
    expiresAt: new Date(expiresAt).toISOString(),
    solve: `SHA-256(challenge + ':' + nonce) with ${difficulty} leading zero bits; send X-Airlock-Solution: <challenge> <nonce>`,
  })
}
