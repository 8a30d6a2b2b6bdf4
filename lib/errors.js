import ModuleError from 'module-error'

/**
 * Stable error codes. Messages may change between versions; codes do not.
 */
export const codes = Object.freeze({
  INVALID: 'LEVELKIT_INVALID',
  UNIQUE: 'LEVELKIT_UNIQUE',
  EXISTS: 'LEVELKIT_EXISTS',
  NOT_FOUND: 'LEVELKIT_NOT_FOUND',
  RESTRICT: 'LEVELKIT_RESTRICT',
  FORBIDDEN: 'LEVELKIT_FORBIDDEN',
  LIMIT: 'LEVELKIT_LIMIT',
  NOT_OPEN: 'LEVELKIT_NOT_OPEN',
  LOCKED: 'LEVELKIT_LOCKED',
  BACKEND_UNAVAILABLE: 'LEVELKIT_BACKEND_UNAVAILABLE',
  ABORTED: 'LEVELKIT_ABORTED',
  DECODE_ERROR: 'LEVELKIT_DECODE_ERROR',
  FOREIGN_DATA: 'LEVELKIT_FOREIGN_DATA',
  CONFLICT: 'LEVELKIT_CONFLICT',
  LOCK_TIMEOUT: 'LEVELKIT_LOCK_TIMEOUT',
  DEADLOCK: 'LEVELKIT_DEADLOCK',
  TX_EXPIRED: 'LEVELKIT_TX_EXPIRED',
  TX_TOO_LARGE: 'LEVELKIT_TX_TOO_LARGE',
  INDEX_BUILDING: 'LEVELKIT_INDEX_BUILDING',
  SCHEMA_CHANGED: 'LEVELKIT_SCHEMA_CHANGED',
  COMMIT_UNKNOWN: 'LEVELKIT_COMMIT_UNKNOWN',
  READ_ONLY: 'LEVELKIT_READ_ONLY',
  NATIVE_LAYOUT: 'LEVELKIT_NATIVE_LAYOUT',
  UNTRACKED_READ: 'LEVELKIT_UNTRACKED_READ'
})

/**
 * @param {string} code
 * @param {string} message
 * @param {{ cause?: unknown, [key: string]: unknown }} [details]
 */
export function levelkitError (code, message, details) {
  const { cause, ...rest } = /** @type {{ cause?: Error, [key: string]: unknown }} */ (details || {})
  const err = new ModuleError(message, { code, cause })
  return Object.assign(err, rest)
}

/** @param {string} message @param {{ cause?: unknown, [key: string]: unknown }} [details] */
export const invalid = (message, details) => levelkitError(codes.INVALID, message, details)

/**
 * Stored data that does not parse as what levelkit writes there: written
 * behind levelkit's back, or damaged. Not LEVELKIT_INVALID, which means the
 * caller's input is bad.
 * @param {string} message @param {{ cause?: unknown, [key: string]: unknown }} [details]
 */
export const decodeError = (message, details) => levelkitError(codes.DECODE_ERROR, message, details)
