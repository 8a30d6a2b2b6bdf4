// Reference solution: padding for the simple case, tuple keys for the rest.
import { tupleEncoding } from 'levelkit'

export function paddedKey (score) {
  // 9 digits: every integer below 1e9 gets the same length, so byte order is numeric order.
  return String(score).padStart(9, '0')
}

const scores = (db) => db.sublevel('scores', { keyEncoding: tupleEncoding })

export async function addScore (db, user, score) {
  await scores(db).put([score, user], user)
}

export async function top (db, n) {
  return scores(db).keys({ reverse: true, limit: n }).all()
}

export async function inRange (db, lo, hi) {
  // [lo] sorts before every [lo, user]; [hi, '\uffff'] after every [hi, user].
  return scores(db).keys({ gte: [lo], lte: [hi, '\uffff'] }).all()
}
