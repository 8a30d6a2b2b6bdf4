/**
 * A bounded map for the read caches of a Namespace: two generations. When the
 * recent one holds half the limit it becomes the older one and the previous
 * older one is dropped; a hit in the older one moves to the recent one. So
 * it holds at most `limit` entries and keeps the ones in use. (Evicting one
 * entry at a time from a Map is slow: deleted entries stay in its table
 * until it is rebuilt.)
 */
export class ReadCache {
  /** @param {number} limit */
  constructor (limit) {
    this.limit = limit
    /** @type {Map<string, any>} */
    this.recent = new Map()
    /** @type {Map<string, any>} */
    this.older = new Map()
  }

  get size () {
    return this.recent.size + this.older.size
  }

  /**
   * The entry for `name` as [value], or undefined when there is none (the
   * value itself may be undefined: a cached absence).
   * @param {string} name
   * @returns {[any] | undefined}
   */
  lookup (name) {
    const value = this.recent.get(name)
    if (value !== undefined || this.recent.has(name)) return [value]
    const older = this.older.get(name)
    if (older === undefined && !this.older.has(name)) return undefined
    this.set(name, older)
    return [older]
  }

  /** @param {string} name @param {any} value */
  set (name, value) {
    this.recent.set(name, value)
    if (this.recent.size * 2 >= this.limit) {
      this.older = this.recent
      this.recent = new Map()
    }
  }

  /** Change the entry for `name` if there is one. @param {string} name @param {any} value */
  update (name, value) {
    if (this.recent.has(name)) this.recent.set(name, value)
    if (this.older.has(name)) this.older.set(name, value)
  }

  /** @param {string} name */
  delete (name) {
    this.recent.delete(name)
    this.older.delete(name)
  }
}
