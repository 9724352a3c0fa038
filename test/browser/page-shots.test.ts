/** tools/page-shots.ts (the docs' screenshots of every page, in English and Arabic) runs and writes real PNGs. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { pageShots } from '../../tools/page-shots.js'
import { chromiumAvailable } from '../helpers/browser.js'

describe.runIf(chromiumAvailable || process.env.CI)('tools/page-shots.ts', () => {
  it('shoots busy, waiting, challenge, left and the proxy 502 in en and ar (right to left)', {
    timeout: 60_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'airlock-shots-'))
    try {
      const files = await pageShots(dir)
      expect(files.map((f) => f.slice(dir.length + 1)).sort()).toEqual(
        ['busy', 'challenge', 'left', 'origin-502', 'waiting'].flatMap((p) => [`${p}-ar.png`, `${p}-en.png`]).sort(),
      )
      for (const f of files) {
        const png = readFileSync(f)
        expect(png.subarray(1, 4).toString(), f).toBe('PNG')
        expect(png.length, f).toBeGreaterThan(5_000)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
