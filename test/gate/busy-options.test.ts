/**
 * The `busy` option group (issue 42): `busy: { page, retryAfter }` as `queue: { page, ... }` is,
 * the flat `busyPage` and `retryAfter` kept as deprecated aliases, both forms of one setting at once
 * refused, a misspelt key inside the group refused naming it and the key meant; and a route gate
 * (`gate.child`) inherits the busy settings in whichever form either side gave them.
 */
import { describe, expect, it } from 'vitest'
import { createGate, type Gate, type GateOptions, type RequestView } from '../../src/gate/gate.js'
import { isAirlockError } from '../../src/base/errors.js'
import type { BusyPageContext } from '../../src/pages/busy.js'
import { memoryStore } from '../../src/stores/memory.js'
import { recordingLogger } from '../helpers/stores.js'

const SECRET = 'b'.repeat(32)
const view = (accept = 'text/html'): RequestView => ({
  method: 'GET',
  url: '/',
  headers: { accept },
  secure: false,
  request: { id: 'req' },
})

const gateWith = (options: GateOptions): Gate =>
  createGate({
    limit: 1,
    clientShare: false,
    secret: SECRET,
    logger: recordingLogger(),
    store: memoryStore(),
    ...options,
  })

/** The busy answer of `gate`: its one slot taken, a newcomer's request (HTML, or JSON with `accept`). */
async function busyAnswer(gate: Gate, accept?: string) {
  const first = await gate.decide(view())
  expect(first.kind).toBe('admit')
  const d = await gate.decide(view(accept))
  expect(d.kind).toBe('busy')
  return d.response!
}

function refusal(options: GateOptions): string {
  try {
    gateWith(options)
  } catch (err) {
    expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION'), String(err)).toBe(true)
    return (err as Error).message
  }
  throw new Error(`expected ERR_AIRLOCK_OPTION for ${JSON.stringify(options)}`)
}

describe('the busy option group', () => {
  it('busy: { page, retryAfter } sets the busy answer: the page, Retry-After, the JSON, gate.retryAfter', async () => {
    const gate = gateWith({ busy: { page: '<p>full</p>', retryAfter: 12 } })
    expect(gate.retryAfter).toBe(12)
    const html = await busyAnswer(gate)
    expect([html.status, html.headers['retry-after'], html.body]).toEqual([503, '12', '<p>full</p>'])
    await gate.close()
    const json = await busyAnswer(gateWith({ busy: { retryAfter: 12 } }), 'application/json')
    expect(JSON.parse(json.body)).toEqual({ status: 'busy', reason: 'full', retryAfter: 12 })
  })

  it("busy.page as a function gets the request's context, retryAfter included", async () => {
    const seen: BusyPageContext[] = []
    const page = (c: BusyPageContext): string => {
      seen.push(c)
      return `<p>again in ${c.retryAfter} s</p>`
    }
    const answer = await busyAnswer(gateWith({ busy: { page, retryAfter: 7 } }))
    expect(answer.body).toBe('<p>again in 7 s</p>')
    expect(seen[0]).toMatchObject({ retryAfter: 7, request: { id: 'req' }, reason: 'full' })
  })

  it('the defaults without the group: the built-in page, 5 s', async () => {
    const gate = gateWith({ busy: {} })
    expect(gate.retryAfter).toBe(5)
    const answer = await busyAnswer(gate)
    expect(answer.headers['retry-after']).toBe('5')
    expect(answer.body).toMatch(/^<!doctype html>/)
  })
})

describe('the flat busyPage and retryAfter: deprecated aliases that still work', () => {
  it('busyPage and retryAfter set the same settings as busy.page and busy.retryAfter', async () => {
    const flat = await busyAnswer(gateWith({ busyPage: '<p>full</p>', retryAfter: 12 }))
    const grouped = await busyAnswer(gateWith({ busy: { page: '<p>full</p>', retryAfter: 12 } }))
    expect(flat).toEqual(grouped)
  })

  it('one setting flat and another grouped is fine', async () => {
    const answer = await busyAnswer(gateWith({ busyPage: '<p>full</p>', busy: { retryAfter: 9 } }))
    expect([answer.headers['retry-after'], answer.body]).toEqual(['9', '<p>full</p>'])
  })

  it('a bad flat value is refused naming the flat option, as before', () => {
    expect(refusal({ retryAfter: 0 })).toBe('retryAfter must be a positive integer, got 0')
    expect(refusal({ busyPage: 42 as never })).toMatch(/^busyPage must be an HTML string or a function/)
  })
})

describe('mistakes in the busy group', () => {
  it('both forms of one setting at once are refused, naming both and which to keep', () => {
    expect(refusal({ busyPage: '<p>a</p>', busy: { page: '<p>b</p>' } })).toBe(
      'busyPage and busy.page are one setting, given twice: keep busy.page and remove busyPage (deprecated; removed in 0.3)',
    )
    expect(refusal({ retryAfter: 5, busy: { retryAfter: 5 } })).toBe(
      'retryAfter and busy.retryAfter are one setting, given twice: keep busy.retryAfter and remove retryAfter (deprecated; removed in 0.3)',
    )
  })

  it('a misspelt key inside busy is refused, naming it and the key meant', () => {
    expect(refusal({ busy: { retryafter: 5 } as never })).toBe(
      "busy has no option 'retryafter' (did you mean 'retryAfter'?); known options are page, retryAfter",
    )
    expect(refusal({ busy: { pgae: '<p>x</p>' } as never })).toMatch(
      /^busy has no option 'pgae' \(did you mean 'page'\?\)/,
    )
    expect(refusal({ busy: { busyPage: '<p>x</p>' } as never })).toMatch(
      /^busy has no option 'busyPage' \(did you mean 'page'\?\)/,
    )
    expect(refusal({ busy: JSON.parse('{"toString": 1}') })).toBe(
      "busy has no option 'toString'; known options are page, retryAfter",
    )
  })

  it('a busy that is not an object, and bad values inside it, are refused naming busy.<key>', () => {
    expect(refusal({ busy: 'x' as never })).toBe(
      `busy must be an object such as { page: '<h1>Busy</h1>', retryAfter: 5 }, got "x"`,
    )
    expect(refusal({ busy: null as never })).toMatch(/^busy must be an object/)
    expect(refusal({ busy: { retryAfter: 0 } })).toBe('busy.retryAfter must be a positive integer, got 0')
    expect(refusal({ busy: { retryAfter: 5000 } })).toMatch(/^busy\.retryAfter is in seconds and at most 3600/)
    expect(refusal({ busy: { page: 42 as never } })).toMatch(/^busy\.page must be an HTML string or a function/)
  })
})

describe('a route gate inherits the busy settings', () => {
  it("the parent's flat busyPage with the child's busy.retryAfter, and the other way round", async () => {
    const parent = gateWith({ busyPage: '<p>parent</p>', retryAfter: 3 })
    const child = parent.child({ name: 'child-a', busy: { retryAfter: 9 } })
    const a = await busyAnswer(child)
    expect([a.headers['retry-after'], a.body]).toEqual(['9', '<p>parent</p>'])
    const grouped = gateWith({ busy: { page: '<p>parent</p>', retryAfter: 3 } })
    const b = await busyAnswer(grouped.child({ name: 'child-b', retryAfter: 9 }))
    expect([b.headers['retry-after'], b.body]).toEqual(['9', '<p>parent</p>'])
    const c = await busyAnswer(grouped.child({ name: 'child-c', busy: { page: '<p>child</p>' } }))
    expect([c.headers['retry-after'], c.body]).toEqual(['3', '<p>child</p>'])
  })

  it('a child that gives both forms of one setting is refused as a gate would be', () => {
    const parent = gateWith({ busy: { retryAfter: 3 } })
    expect(() => parent.child({ name: 'child-d', retryAfter: 4, busy: { retryAfter: 4 } })).toThrow(
      /^retryAfter and busy\.retryAfter are one setting, given twice/,
    )
  })
})
