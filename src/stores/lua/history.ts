/**
 * The Redis history's two scripts (src/stores/redis-history.ts). A gate's minutes are hashes under
 * its hash tag, `{<prefix>:<name>}:hm:<minute>` (one Cluster slot with the gate's other keys).
 */
import { luaScript } from '../redis-calls.js'

/**
 * Adds one instance's parts. KEYS: the gate's line (`:q`), then each part's minute hash. ARGV:
 * keepMs, the line's field, then per part: how many counters, how many maxima, then the pairs of
 * each (field, integer). Counters are added (HINCRBY), maxima kept (the largest wins); the last
 * minute also keeps the largest line length read (ZCARD of the line). A minute that would hold
 * nothing is not created. Every minute written expires `keepMs` after this write.
 */
const ADD = `
local keep = tonumber(ARGV[1])
local at = 3
for k = 2, #KEYS do
  local key = KEYS[k]
  local adds = tonumber(ARGV[at])
  local maxima = tonumber(ARGV[at + 1])
  at = at + 2
  for _ = 1, adds do
    redis.call('HINCRBY', key, ARGV[at], ARGV[at + 1])
    at = at + 2
  end
  for _ = 1, maxima do
    local old = tonumber(redis.call('HGET', key, ARGV[at]) or '-1')
    if tonumber(ARGV[at + 1]) > old then redis.call('HSET', key, ARGV[at], ARGV[at + 1]) end
    at = at + 2
  end
  if k == #KEYS then
    local line = redis.call('ZCARD', KEYS[1])
    local old = tonumber(redis.call('HGET', key, ARGV[2]) or '-1')
    if line > old and (line > 0 or redis.call('EXISTS', key) == 1) then redis.call('HSET', key, ARGV[2], line) end
  end
  if adds + maxima > 0 or k == #KEYS then redis.call('PEXPIRE', key, keep) end
end
return #KEYS - 1`

/** Reads minute hashes. KEYS: the minutes. Answers one flat HGETALL reply per key (empty when it is gone). */
const READ = `
local out = {}
for k = 1, #KEYS do out[k] = redis.call('HGETALL', KEYS[k]) end
return out`

/** The scripts (KEYS counts vary per call: the caller sets `numKeys`). */
export const HISTORY_ADD = luaScript(ADD, 0)
export const HISTORY_READ = luaScript(READ, 0)
/** For `npm run lint:lua`. */
export const HISTORY_SCRIPTS = [
  { name: 'HISTORY_ADD', lua: ADD },
  { name: 'HISTORY_READ', lua: READ },
] as const
