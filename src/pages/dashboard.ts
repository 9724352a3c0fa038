/**
 * The operator's dashboard page: one self-contained HTML page (no CDN, no external request; its
 * script and style allowed by hash), live from the dashboard's server-sent events. It shows, per
 * gate: slots held against the limit, the line, admitted and busy per second (quiet once no new
 * sample comes), the ETA, store latency, breakers, the instances, the last 15 minutes as charts on a
 * time axis, the look back (the last hour, day or 30 days from the per-minute history, the minute
 * in progress included, fetched from `history`), and the live controls. Its script:
 * dashboard-script.ts.
 */
import { inlineHashes, pageCsp, REDUCED_MOTION } from './csp.js'
import { DASHBOARD_SCRIPT } from './dashboard-script.js'

export { DASHBOARD_SCRIPT }

export const DASHBOARD_STYLE =
  'body{margin:0;font:14px/1.4 system-ui,sans-serif;background:#f4f5f7;color:#1d2330}header{padding:.8em 1.2em;' +
  'background:#1d2330;color:#fff;display:flex;gap:1em;align-items:baseline}header h1{margin:0;font-size:1em}header small{opacity:.7}' +
  'section{background:#fff;margin:1em;padding:1em;border-radius:8px;box-shadow:0 1px 3px #0002}' +
  'h2{margin:0 0 .6em;font-size:1.2em}.tiles{display:grid;grid-template-columns:repeat(auto-fill,minmax(9em,1fr));gap:.6em}' +
  '.tile{background:#f4f5f7;border-radius:6px;padding:.5em .7em}.tile b{display:block;font-size:1.6em}' +
  '.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(22em,1fr));gap:.8em;margin-top:.8em}' +
  'figure{margin:0}figcaption{font-size:.85em;color:#556}svg{width:100%;height:90px;background:#fafbfc;border-radius:4px}' +
  'table{border-collapse:collapse;width:100%;margin-top:.8em;font-size:.9em}td,th{text-align:left;padding:.2em .5em;border-bottom:1px solid #e3e5e8}' +
  'form{display:flex;flex-wrap:wrap;gap:.5em;align-items:end;margin-top:.8em}label{display:flex;flex-direction:column;font-size:.8em}' +
  'input,select,button{font:inherit;padding:.25em .4em}.err{color:#b00020}.open{color:#b00020;font-weight:bold}' +
  '.back{margin-top:1em;border-top:1px solid #e3e5e8}h3{font-size:1em;margin:.8em 0 .4em}.back [role=group]{display:flex;gap:.4em}' +
  '.back button[aria-pressed=true]{background:#1d2330;color:#fff}.axis{position:relative;height:1.4em;font-size:.8em;color:#556}' +
  '.axis time{position:absolute;top:.15em;transform:translateX(-50%);white-space:nowrap}.axis time:first-child{transform:none}' +
  '.axis time:last-child{transform:translateX(-100%)}.legend{margin:.4em 0 0;font-size:.85em;color:#556}.quiet b{color:#5c6370}' +
  REDUCED_MOTION

export const dashboardHashes = inlineHashes(DASHBOARD_SCRIPT, DASHBOARD_STYLE)

/** The policy sent with the page: its script and style, and requests to its own origin. */
export const DASHBOARD_CSP = pageCsp(dashboardHashes, "connect-src 'self'; ").replace(
  "form-action 'none'",
  "form-action 'self'",
)

/**
 * The page (about 13 KB): everything else comes from the events. `interval`: the dashboard's ms
 * between samples (default 1000), after three of which without a new sample the tiles go quiet.
 */
export function renderDashboardPage(options: {
  names: readonly string[]
  controls: boolean
  history?: boolean
  interval?: number
}): string {
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">' +
    '<meta name="robots" content="noindex"><title>airlock-shield: dashboard</title>' +
    `<style>${DASHBOARD_STYLE}</style></head><body><header><h1>airlock-shield</h1><span>${options.names.length} gate(s)</span>` +
    `<small id="u">connecting...</small></header><main id="d" data-controls="${options.controls ? 1 : 0}" data-history="${options.history === false ? 0 : 1}" data-interval="${options.interval ?? 1000}"></main>` +
    `<script>${DASHBOARD_SCRIPT}</script></body></html>`
  )
}
