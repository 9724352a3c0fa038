/**
 * airlock-shield: a distributed semaphore with leases (memory or Redis), and the web gate built on it.
 * @packageDocumentation
 */
export { AirlockError, isAirlockError, type AirlockErrorCode } from './core/errors.js'
export {
  createSemaphore,
  Semaphore,
  type AcquireOptions,
  type BlockingOptions,
  type Lease,
  type LeaseHandle,
  type RunContext,
  type RunOptions,
  type SemaphoreOptions,
  type SemaphoreState,
} from './core/semaphore.js'
export {
  assertVisitorId,
  createWaitingRoom,
  estimateWait,
  MAX_VISITOR_ID_LENGTH,
  newVisitorId,
  WaitingRoom,
  type Admitted,
  type EnterResult,
  type Full,
  type PollResult,
  type Queued,
  type WaitingRoomOptions,
  type WaitingRoomState,
  type WithAdmittedOptions,
} from './core/waiting-room.js'
export { memoryStore, MemoryStore, type MemoryStoreOptions } from './stores/memory.js'
export { redisStore, RedisStore, type RedisClient, type RedisStoreOptions } from './stores/redis.js'
export type {
  AcquireRequest,
  AcquireResult,
  LeaseState,
  QueueRequest,
  RefreshResult,
  Store,
} from './stores/types.js'
