// Reference solution: every answer is one range read with tight bounds.
export async function onDay (db, day) {
  // Every key of that day starts with the day; '\xff' sorts after any time.
  return db.iterator({ gte: day, lt: day + '\xff' }).all()
}

export async function countSince (db, time) {
  let count = 0
  for await (const key of db.keys({ gte: time })) count++ // eslint-disable-line no-unused-vars
  return count
}

export async function latest (db, n) {
  return db.iterator({ reverse: true, limit: n }).all()
}

export async function between (db, from, to) {
  return db.iterator({ gte: from, lt: to }).all()
}
