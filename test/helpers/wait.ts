/** Waiting helpers shared by the tests (real time). */

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/**
 * Polls `check` every `every` ms until it returns true; fails after `timeout` ms. Resolves with the
 * time it took.
 */
export async function until(check: () => Promise<boolean> | boolean, timeout = 10_000, every = 20): Promise<number> {
  const t0 = Date.now()
  for (;;) {
    if (await check()) return Date.now() - t0
    if (Date.now() - t0 > timeout) throw new Error(`condition not met within ${timeout} ms`)
    await sleep(every)
  }
}

/** Closes each socket (a WebSocket, or anything with `close()` and a `close` event) and resolves once all have closed. */
export function closeAll(
  sockets: readonly { once(event: 'close', fn: () => void): unknown; close(): void }[],
): Promise<unknown> {
  return Promise.all(
    sockets.map(
      (s) =>
        new Promise<void>((done) => {
          s.once('close', () => done())
          s.close()
        }),
    ),
  )
}
