import { afterAll } from 'vitest'
import { memoryStore, type MemoryStore } from '../../src/stores/memory.js'
import { waitingRoomSuite } from './waiting-room.suite.js'

// A manual clock drives the memory store: the line's timing rules are checked to the millisecond.
let clock = 1_700_000_000_000
const driven = memoryStore({ now: () => clock })
const stores: MemoryStore[] = [driven]

waitingRoomSuite('memory', {
  store: () => driven,
  advance: async (ms) => {
    clock += ms
  },
  realStore: () => {
    const s = memoryStore()
    stores.push(s)
    return s
  },
})

afterAll(async () => {
  for (const s of stores) await s.close()
})
