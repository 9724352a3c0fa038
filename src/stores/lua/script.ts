/**
 * How a Redis store script is built: its arguments (read into Lua locals of the same names), its
 * body, and the rendered Lua (the shared prelude, then the argument locals, then the body).
 */
import { luaScript, type LuaScript } from '../redis-calls.js'
import { luaArgs, type ArgSpec } from './boundary.js'
import { KEY_SUFFIXES, PRELUDE } from './prelude.js'

export interface Script<A extends ArgSpec = ArgSpec> extends LuaScript {
  /** For logs and lint output. */
  readonly name: string
  /** The fixed arguments, in ARGV order. Scripts taking a list read it after them (`REST`). */
  readonly args: A
  /** Every script receives every key of the semaphore, in this order. */
  readonly keys: typeof KEY_SUFFIXES
}

export function script<A extends ArgSpec>(name: string, args: A, body: string): Script<A> {
  const rest = body.includes('REST') ? `\nlocal REST = ${Object.keys(args).length + 1} -- the first list argument` : ''
  const lua = `${PRELUDE}\n${luaArgs(args)}${rest}\n${body.trim()}\n`
  return { name, args, ...luaScript(lua, KEY_SUFFIXES.length), keys: KEY_SUFFIXES }
}
