import { Query } from './query.js'

/**
 * The query relation.to() and relation.from() return: a Query of ids, and
 * records() for the records they name.
 */
export class RelationQuery extends Query {
  /** @type {(query: RelationQuery) => Promise<any[]>} */
  #records

  /**
   * @param {import('./query.js').QuerySource} source
   * @param {{ reverse?: boolean, limit?: number, cursor?: string | null }} options
   * @param {(query: RelationQuery) => Promise<any[]>} records reads the records of the query's ids
   */
  constructor (source, options, records) {
    super(source, options)
    this.#records = records
  }

  /**
   * The records of the other side that the query's ids name, in the
   * query's order (its bounds, limit, reverse and cursor apply to the ids),
   * leaving out an id whose record is gone by the time it is read.
   * @returns {Promise<any[]>}
   */
  records () {
    try {
      return this.#records(this)
    } catch (err) {
      return Promise.reject(err)
    }
  }
}
