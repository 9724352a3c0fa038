// Moved to src/core/guard.ts (the gate and the lock service both use it); kept until gate.ts imports it from there.
export { StoreGuard } from '../core/guard.js'
