/**
 * Time budgets that do not mistake a busy process for a slow store.
 *
 * Node runs expired timers before it reads sockets in each turn of the event loop. When a process
 * is busy (a crowd is arriving: exactly when the gate matters) for longer than a budget, a plain
 * `setTimeout` race fires while the store's answer already sits unread in the socket, and the call
 * is wrongly counted as a store failure. So a budget that runs out is only acted on after the
 * event loop's next poll for I/O (`setImmediate` from the timer): an answer that arrived meanwhile
 * still wins.
 */

/** Calls `fn` once `ms` have passed and the event loop has since read any pending I/O. */
export function afterIo(ms: number, fn: () => void): { cancel(): void } {
  let immediate: NodeJS.Immediate | undefined
  const timer = setTimeout(() => {
    immediate = setImmediate(fn)
  }, ms)
  return {
    cancel() {
      clearTimeout(timer)
      if (immediate !== undefined) clearImmediate(immediate)
    },
  }
}

/**
 * Settles like `promise`, or rejects with `onTimeout()` when `promise` has not settled within `ms`
 * (judged after pending I/O was read). `onLate` receives a value that arrives after the rejection
 * (e.g. to release a slot nobody will use).
 */
export async function withinBudget<T>(
  promise: Promise<T>,
  ms: number,
  onTimeout: () => Error,
  onLate?: (value: T) => void,
): Promise<T> {
  let deadline: { cancel(): void } | undefined
  const late = new Promise<never>((_, reject) => {
    deadline = afterIo(ms, () => {
      promise.then(onLate ?? (() => {}), () => {})
      reject(onTimeout())
    })
  })
  try {
    return await Promise.race([promise, late])
  } finally {
    deadline!.cancel()
  }
}
