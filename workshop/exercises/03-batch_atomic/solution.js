// Reference solution: build the whole list of operations, then one batch().
export async function applyChanges (db, changes) {
  const ops = [
    ...changes.del.map(key => ({ type: 'del', key })),
    ...Object.entries(changes.put).map(([key, value]) => ({ type: 'put', key, value }))
  ]
  await db.batch(ops)
}

export async function transfer (db, from, to, amount) {
  const [fromBalance, toBalance] = await db.getMany([from, to])
  // One batch: a failure leaves both balances as they were.
  await db.batch([
    { type: 'put', key: from, value: fromBalance - amount },
    { type: 'put', key: to, value: toBalance + amount }
  ])
}
