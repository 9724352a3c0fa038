/** Proof-of-work nonces for the door's tests, found by brute force with node:crypto. */
import { createHash } from 'node:crypto'
import { leadingZeroBits } from '../../src/gate/challenge.js'

const bits = (challenge: string, n: number): number =>
  leadingZeroBits(createHash('sha256').update(`${challenge}:${n}`).digest())

/** The first nonce that solves `challenge` at `difficulty` bits. */
export function solvingNonce(challenge: string, difficulty: number): string {
  for (let n = 0; ; n++) if (bits(challenge, n) >= difficulty) return String(n)
}

/** A nonce that surely does not solve it (a fixed one such as `0` solves 8 bits once in 256). */
export function wrongNonce(challenge: string, difficulty: number): string {
  for (let n = 0; ; n++) if (bits(challenge, n) < difficulty) return String(n)
}
