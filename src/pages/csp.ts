/** What every built-in page shares: its look, and a strict CSP allowing its own inline script and style by hash. */
import { createHash } from 'node:crypto'

/** No animation nor transition for a visitor who asked for reduced motion (`prefers-reduced-motion: reduce`). */
export const REDUCED_MOTION =
  '@media(prefers-reduced-motion:reduce){*,:before,:after{animation:none!important;transition:none!important}}'

/** The layout and colours every built-in page starts its style with, and {@link REDUCED_MOTION}. */
export const BASE_STYLE =
  'body{margin:0;min-height:100vh;display:grid;place-items:center;font:17px/1.5 system-ui,sans-serif;' +
  'background:#f4f5f7;color:#1d2330}main{max-width:30em;padding:2em;text-align:center}h1{font-size:1.5em;margin:0 0 .5em}' +
  REDUCED_MOTION

/** A CSP source allowing exactly `text` inline: `'sha256-…'`. */
export function sha256Source(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`
}

/** The hashes of a page's inline script and style, for a site that adds its own CSP to the page. */
export function inlineHashes(script: string, style: string): Readonly<{ script: string; style: string }> {
  return Object.freeze({ script: sha256Source(script), style: sha256Source(style) })
}

/** The policy sent with a built-in page: nothing but its own script and style (and `extra` sources). */
export function pageCsp(hashes: { script: string; style: string }, extra = ''): string {
  return (
    `default-src 'none'; script-src ${hashes.script}; style-src ${hashes.style}; ${extra}` +
    `base-uri 'none'; form-action 'none'; frame-ancestors 'none'`
  )
}

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}
