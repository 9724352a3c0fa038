import { describe, expect, it } from 'vitest'
import {
  assertVisitorId,
  createWaitingRoom,
  estimateWait,
  isAirlockError,
  memoryStore,
  newVisitorId,
  type WaitingRoomOptions,
} from '../../src/index.js'

const base: WaitingRoomOptions = { name: 'tickets', limit: 2, ttl: 1000 }

function optionError(fn: () => unknown): Error {
  try {
    fn()
  } catch (err) {
    expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION')).toBe(true)
    return err as Error
  }
  throw new Error('expected ERR_AIRLOCK_OPTION')
}

describe('createWaitingRoom options', () => {
  it('has the documented defaults', () => {
    const room = createWaitingRoom(base)
    expect(room).toMatchObject({
      order: 'fifo',
      maxLength: 100_000,
      idleTimeout: 30_000,
      claimWindow: 10_000,
      confirmTimeout: 0,
      retryInterval: 1000,
    })
    expect(createWaitingRoom({ ...base, idleTimeout: 600, claimWindow: 400 }).retryInterval).toBe(200)
  })

  it.each([
    ['name', { name: 'has space' }, /^name must be 1 to 64 characters/],
    ['limit', { limit: 0 }, /^limit must be a positive integer, got 0/],
    ['ttl', { ttl: -1 }, /^ttl must be a positive number of milliseconds/],
    ['order', { order: 'lifo' }, /^order must be one of 'fifo', 'random', got "lifo"/],
    ['maxLength', { maxLength: 1.5 }, /^maxLength must be a non-negative integer/],
    ['idleTimeout', { idleTimeout: 0 }, /^idleTimeout must be a positive number/],
    ['claimWindow', { claimWindow: '10 seconds' }, /^claimWindow must be a positive number/],
    ['retryInterval', { retryInterval: 30_000 }, /^retryInterval must be below idleTimeout \(30000\)/],
    ['confirmTimeout', { confirmTimeout: -5 }, /^confirmTimeout must be a non-negative integer, got -5/],
    [
      'confirmTimeout above idleTimeout',
      { confirmTimeout: 60_000 },
      /^confirmTimeout must be at most idleTimeout \(30000\), got 60000/,
    ],
    ['store', { store: {} }, /^store must implement the Store interface; missing acquire/],
    ['a typo', { limt: 3 }, /has no option 'limt'/],
  ])('rejects a bad %s at creation, naming it', (_what, patch, message) => {
    expect(optionError(() => createWaitingRoom({ ...base, ...(patch as object) })).message).toMatch(message)
  })

  it('rejects a missing options object', () => {
    expect(optionError(() => createWaitingRoom(undefined as never)).message).toMatch(/needs an options object/)
  })

  it('accepts maxLength 0 (no cap)', () => {
    expect(createWaitingRoom({ ...base, maxLength: 0 }).maxLength).toBe(0)
  })
})

describe('visitor ids', () => {
  it.each(['a', 'user:42', 'AbC-_.~9', '7f9c2ba4-e88f-11ea-adc1-0242ac120002', 'x'.repeat(128), newVisitorId()])(
    'accepts %s',
    (id) => {
      expect(assertVisitorId(id)).toBe(id)
    },
  )

  it.each([
    ['empty', ''],
    ['too long', 'x'.repeat(129)],
    ['a space', 'a b'],
    ['a brace', '{x}'],
    ['a newline', 'a\nb'],
    ['unicode', 'é'],
    ['a number', 42],
    ['undefined', undefined],
  ])('rejects %s with ERR_AIRLOCK_OPTION, on every method', async (_what, id) => {
    const room = createWaitingRoom({ ...base, name: 'ids', store: memoryStore() })
    expect(optionError(() => assertVisitorId(id)).message).toMatch(/^visitorId must be 1 to 128 characters/)
    for (const call of [
      () => room.enter(id as string),
      () => room.getPosition(id as string),
      () => room.poll(id as string),
      () => room.leave(id as string),
      () => room.withAdmitted(id as string, () => 1),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: 'ERR_AIRLOCK_OPTION' })
    }
    expect(() => room.lease(id as string)).toThrow(/visitorId/)
  })

  it('never echoes a long id into the message', () => {
    expect(optionError(() => assertVisitorId('y'.repeat(5000))).message).toMatch(/a string of 5000 characters/)
  })

  it('newVisitorId gives unguessable, distinct ids', () => {
    const ids = new Set(Array.from({ length: 1000 }, newVisitorId))
    expect(ids.size).toBe(1000)
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/)
  })
})

describe('estimateWait', () => {
  it('is null until two admissions fall in the window', () => {
    expect(estimateWait(5, 0, 0)).toEqual({ eta: null, rate: null })
    expect(estimateWait(5, 1, 30_000)).toEqual({ eta: null, rate: null })
    expect(estimateWait(5, 3, 0)).toEqual({ eta: null, rate: null })
  })

  it('is position / rate, with rate = (admitted - 1) / span', () => {
    // 11 admissions, the first 10 s ago: 1 per second.
    expect(estimateWait(1, 11, 10_000)).toEqual({ eta: 1000, rate: 1 })
    expect(estimateWait(30, 11, 10_000)).toEqual({ eta: 30_000, rate: 1 })
    // 61 in the last 60 s: the same rate.
    expect(estimateWait(30, 61, 60_000)).toEqual({ eta: 30_000, rate: 1 })
    expect(estimateWait(3, 2, 1000).eta).toBe(3000)
  })

  it('rounds up to whole ms', () => {
    expect(estimateWait(1, 4, 1000).eta).toBe(334)
  })
})
