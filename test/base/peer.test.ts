import { describe, expect, it } from 'vitest'
import { isAirlockError } from '../../src/base/errors.js'
import { assertPeers, loadPeer, type Peer } from '../../src/base/peer.js'

describe('loadPeer', () => {
  it('loads an installed optional peer', () => {
    const fastify = loadPeer<typeof import('fastify').default>('fastify', 'test')
    expect(typeof fastify).toBe('function')
  })

  it('a missing peer: ERR_AIRLOCK_PEER_MISSING with the one-line fix, and the module error as cause', () => {
    let err: unknown
    try {
      loadPeer('airlock-no-such-peer' as Peer, 'createLockServer()')
    } catch (e) {
      err = e
    }
    expect(isAirlockError(err, 'ERR_AIRLOCK_PEER_MISSING')).toBe(true)
    expect((err as Error).message).toBe(
      'createLockServer() needs the optional dependency airlock-no-such-peer, which is not installed: npm install airlock-no-such-peer',
    )
    expect(((err as Error).cause as NodeJS.ErrnoException).code).toBe('MODULE_NOT_FOUND')
  })
})

describe('several missing peers (issue 25)', () => {
  it('are named in one message with one install command', () => {
    expect(() => assertPeers(['airlock-no-such-a', 'undici', 'airlock-no-such-b'] as Peer[], 'createProxy()')).toThrow(
      'createProxy() needs the optional dependencies airlock-no-such-a and airlock-no-such-b, which are not installed: npm install airlock-no-such-a airlock-no-such-b',
    )
    expect(() => assertPeers(['undici', 'prom-client'], 'createProxy()')).not.toThrow()
  })
})
