/**
 * The typed boundary between the Redis store and its Lua scripts. One table per script says which
 * arguments it takes (name, and how Lua reads it) and which replies it gives (a status code and
 * named fields); the Lua `local` lines and reply constructors, and the TypeScript packing and
 * decoding, are all generated from those tables, so the two sides cannot drift apart.
 */
import type { StoreEnded } from '../types.js'

/** How Lua reads an argument: `s` string, `n` number (`tonumber`), `b` flag (sent as 1/0). */
export type ArgKind = 's' | 'n' | 'b'
export type ArgSpec = Readonly<Record<string, ArgKind>>
export type ArgValues<A extends ArgSpec> = {
  readonly [K in keyof A]: A[K] extends 'n' ? number : A[K] extends 'b' ? boolean : string
}

/** Lua `local` lines reading `spec` from ARGV, in order, starting at ARGV[`from`]. */
export function luaArgs(spec: ArgSpec, from = 1): string {
  return Object.entries(spec)
    .map(([name, kind], i) => {
      const at = `ARGV[${from + i}]`
      return `local ${name} = ${kind === 'n' ? `tonumber(${at})` : kind === 'b' ? `${at} == '1'` : at}`
    })
    .join('\n')
}

/** The ARGV values of `spec`, in the order {@link luaArgs} reads them. */
export function packArgs<A extends ArgSpec>(spec: A, values: ArgValues<A>): (string | number)[] {
  return Object.entries(spec).map(([name, kind]) => {
    const v = values[name as keyof A]
    return kind === 'b' ? (v ? 1 : 0) : (v as string | number)
  })
}

/**
 * A Lua function `name(i)` returning the fields of the i-th (1-based) group of `spec` in the ARGV
 * tail that starts at ARGV[`from`] (batched requests).
 */
export function luaGroup(name: string, spec: ArgSpec, from: number): string {
  const width = Object.keys(spec).length
  const reads = Object.values(spec).map((kind, i) => {
    const at = `ARGV[b + ${i}]`
    return kind === 'n' ? `tonumber(${at})` : kind === 'b' ? `${at} == '1'` : at
  })
  return `local function ${name}(i)\n  local b = ${from} + (i - 1) * ${width}\n  return ${reads.join(',\n    ')}\nend`
}

/** Status codes and the named fields that follow them in a decision's reply (all numbers). */
export const REPLIES = {
  busy: { code: 0, fields: ['now', 'nextExpiry'] },
  /** `waited`: admitted from the line, ms since its place was taken; else -1. */
  acquired: { code: 1, fields: ['fence', 'expiresAt', 'now', 'waited'] },
  queued: { code: 2, fields: ['position', 'waiting', 'now', 'nextExpiry', 'admitted', 'windowMs'] },
  full: { code: 3, fields: ['waiting', 'now'] },
  absent: { code: 4, fields: ['now'] },
  /** A batched plain acquire found people in line: ask again with the single-decision script. */
  line: { code: 5, fields: [] },
  /** The caller's client is over its share. */
  share: { code: 6, fields: ['now'] },
} as const

export type ReplyStatus = keyof typeof REPLIES
export type Reply = {
  [S in ReplyStatus]: { status: S } & { [F in (typeof REPLIES)[S]['fields'][number]]: number }
}[ReplyStatus]

/** Width of one reply in a batch: the longest reply a batched acquire gives (acquired). */
export const BATCH_REPLY_WIDTH = 1 + REPLIES.acquired.fields.length

const BY_CODE = new Map<number, ReplyStatus>(Object.entries(REPLIES).map(([s, r]) => [r.code, s as ReplyStatus]))

/** Decodes the reply that starts at `reply[at]`. */
export function decodeReply(reply: readonly number[], at = 0): Reply {
  const status = BY_CODE.get(reply[at]!)
  if (status === undefined) throw new Error(`unknown reply status ${String(reply[at])} from an airlock script`)
  const out: Record<string, unknown> = { status }
  REPLIES[status].fields.forEach((field, i) => {
    out[field] = reply[at + 1 + i]
  })
  return out as Reply
}

/** Lua constructors `reply_<status>(fields...)`, one per status of {@link REPLIES}. */
export function luaReplies(): string {
  return Object.entries(REPLIES)
    .map(([status, r]) => {
      const args = r.fields.join(', ')
      return `local function reply_${status}(${args})\n  return {${[r.code, ...r.fields].join(', ')}}\nend`
    })
    .join('\n')
}

/**
 * What a reply tells from `reply[at]` on (the prelude's `with_ended`: expired, lapsed, the count of
 * visits, the visits), or `undefined` when it tells nothing there.
 */
export function decodeEnded(reply: readonly unknown[], at: number): StoreEnded | undefined {
  if (reply.length < at + 3) return undefined
  const n = Number(reply[at + 2])
  const visits: number[] = []
  for (let i = 0; i < n; i++) visits.push(Number(reply[at + 3 + i]))
  return { expired: Number(reply[at]), lapsed: Number(reply[at + 1]), visits }
}

/** `leaseState` answers, shared with Lua as `LEASE_<STATE>`. */
export const LEASE_CODES = { acquired: 1, expired: 2, released: 3 } as const

/** Lua constants for {@link LEASE_CODES}. */
export function luaLeaseCodes(): string {
  return Object.entries(LEASE_CODES)
    .map(([state, code]) => `local LEASE_${state.toUpperCase()} = ${code}`)
    .join('\n')
}
