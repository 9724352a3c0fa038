import { expectTypeOf, test } from 'vitest'
import {
  createWaitingRoom,
  type EnterResult,
  type Lease,
  type PollResult,
  type WaitingRoomOptions,
} from '../../src/index.js'

test('waiting room types', () => {
  expectTypeOf(createWaitingRoom).parameter(0).toEqualTypeOf<WaitingRoomOptions>()
  expectTypeOf<WaitingRoomOptions['order']>().toEqualTypeOf<'fifo' | 'random' | undefined>()
  const room = createWaitingRoom({ name: 'x', limit: 1, ttl: 1000 })
  expectTypeOf(room.enter).returns.resolves.toEqualTypeOf<EnterResult>()
  expectTypeOf(room.poll).returns.resolves.toEqualTypeOf<PollResult>()
  expectTypeOf(room.getPosition).returns.resolves.toEqualTypeOf<number | null>()
  expectTypeOf(room.leave).returns.resolves.toEqualTypeOf<boolean>()
  expectTypeOf(room.withAdmitted('v', () => 1)).resolves.toEqualTypeOf<number>()
  const r = {} as EnterResult
  if (r.status === 'admitted') expectTypeOf(r.lease).toEqualTypeOf<Lease>()
  if (r.status === 'queued') {
    expectTypeOf(r.position).toEqualTypeOf<number>()
    expectTypeOf(r.eta).toEqualTypeOf<number | null>()
  }
  if (r.status === 'full') expectTypeOf(r.waiting).toEqualTypeOf<number>()
  // @ts-expect-error unknown option
  createWaitingRoom({ name: 'x', limit: 1, ttl: 1000, limt: 2 })
})
