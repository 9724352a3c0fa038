/**
 * What the commands that serve share (proxy, auth, dashboard, serve): listening, a port that cannot
 * be had as exit 1 naming the address, and running until SIGINT or SIGTERM.
 */
import { CliError, EXIT } from './exit.js'

/** Resolves with the first SIGINT or SIGTERM (made before listening, so that none is missed). */
export function untilStopped(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'))
    process.once('SIGTERM', () => resolve('SIGTERM'))
  })
}

/**
 * Listens on `address` with `listen`; when it cannot, closes what was built (`close`) and fails
 * with exit 1 naming the address.
 */
export async function listenOrExit<T>(
  address: { port: number; host: string },
  listen: (address: { port: number; host: string }) => Promise<T>,
  close: () => unknown,
): Promise<T> {
  try {
    return await listen(address)
  } catch (err) {
    await close()
    throw new CliError(EXIT.FAILURE, `cannot listen on ${address.host}:${address.port}: ${(err as Error).message}`)
  }
}
