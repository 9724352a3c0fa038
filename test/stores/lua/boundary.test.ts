import { describe, expect, it } from 'vitest'
import { decodeReply, luaArgs, luaGroup, luaReplies, packArgs, REPLIES } from '../../../src/stores/lua/boundary.js'
import { SCRIPTS } from '../../../src/stores/lua/scripts.js'

describe('the Lua boundary', () => {
  it('reads arguments in Lua in the order TypeScript packs them, with their kinds', () => {
    const spec = { token: 's', limit: 'n', queued: 'b' } as const
    expect(luaArgs(spec)).toBe("local token = ARGV[1]\nlocal limit = tonumber(ARGV[2])\nlocal queued = ARGV[3] == '1'")
    expect(packArgs(spec, { token: 't', limit: 3, queued: true })).toEqual(['t', 3, 1])
    expect(packArgs(spec, { queued: false, limit: 0, token: 'x' })).toEqual(['x', 0, 0]) // spec order, not object order
    expect(luaGroup('item', { a: 's', b: 'n' }, 2)).toContain(
      'local b = 2 + (i - 1) * 2\n  return ARGV[b + 0],\n    tonumber(ARGV[b + 1])',
    )
  })

  it('decodes every reply by its status code into named fields', () => {
    expect(decodeReply([REPLIES.acquired.code, 7, 1000, 900])).toEqual({
      status: 'acquired',
      fence: 7,
      expiresAt: 1000,
      now: 900,
    })
    expect(decodeReply([9, 9, REPLIES.busy.code, 5, -1], 2)).toEqual({ status: 'busy', now: 5, nextExpiry: -1 })
    expect(() => decodeReply([42])).toThrow(/unknown reply status 42/)
    for (const [status, r] of Object.entries(REPLIES)) {
      expect(luaReplies()).toContain(
        `local function reply_${status}(${r.fields.join(', ')})\n  return {${[r.code, ...r.fields].join(', ')}}`,
      )
    }
  })

  it('renders each script with the prelude, its argument locals and a stable sha', () => {
    const names = SCRIPTS.map((s) => s.name)
    expect(new Set(names).size).toBe(names.length)
    for (const s of SCRIPTS) {
      expect(s.lua).toContain(luaArgs(s.args))
      expect(s.sha).toMatch(/^[0-9a-f]{40}$/)
      expect(s.lua.includes('REST')).toBe(s.lua.includes('local REST ='))
    }
  })
})
