/**
 * Exit statuses of the `airlock` command (BSD sysexits where one fits) and the errors that carry them.
 */
export const EXIT = {
  OK: 0,
  /** Something unexpected went wrong in airlock itself. */
  FAILURE: 1,
  /** EX_USAGE: a bad, missing or unknown flag. */
  USAGE: 64,
  /** EX_UNAVAILABLE: Redis unreachable, or an optional dependency (ioredis, fastify) not installed. */
  UNAVAILABLE: 69,
  /** EX_SOFTWARE: the slot was lost while the command ran (a refresh failed); the command was stopped. */
  LEASE_LOST: 70,
  /** EX_TEMPFAIL: not admitted within --wait; try again later. */
  BUSY: 75,
  /** EX_CONFIG: the environment is misconfigured (e.g. no API key for `airlock serve`). */
  CONFIG: 78,
  /** The command was found but could not be executed (as in sh). */
  CANNOT_EXECUTE: 126,
  /** The command was not found (as in sh). */
  NOT_FOUND: 127,
} as const

/** A failure to report on one line of stderr and exit with `code`. */
export class CliError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

/** A usage error: exit 64 with a line naming the flag and pointing at `--help`. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(EXIT.USAGE, message)
  }
}
