/**
 * The one Store contract, as shipped in `airlock-shield/testing` (src/testing/), with vitest's API.
 * Every store runs it unchanged (memory, redis, cluster, the custom-store example).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storeContract as shipped, type ContractTarget } from '../../src/testing/index.js'

export type { ContractTarget }

export function storeContract(label: string, make: () => Promise<ContractTarget>): void {
  shipped({ describe, it, expect, beforeAll, afterAll }, label, make)
}
