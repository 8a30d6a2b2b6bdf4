// Reference solution: every membership is stored twice, once per direction,
// and both are always written (or deleted) together in one batch. Each query
// is one range read over one direction.
import { tupleEncoding } from 'levelkit'

const groupUsers = (db) => db.sublevel('groupUsers', { keyEncoding: tupleEncoding })
const userGroups = (db) => db.sublevel('userGroups', { keyEncoding: tupleEncoding })

export async function join (db, user, group) {
  // Putting an existing membership again changes nothing: no need to read first.
  await db.batch([
    { type: 'put', sublevel: groupUsers(db), key: [group, user], value: '' },
    { type: 'put', sublevel: userGroups(db), key: [user, group], value: '' }
  ])
}

export async function leave (db, user, group) {
  // Deleting a key that is not there is fine too.
  await db.batch([
    { type: 'del', sublevel: groupUsers(db), key: [group, user] },
    { type: 'del', sublevel: userGroups(db), key: [user, group] }
  ])
}

// [x] sorts before every [x, y]; [x, '\uffff'] after every [x, y] (for
// y in the Basic Multilingual Plane). Keys only: the values are empty.
const second = async (sublevel, first) => {
  const keys = await sublevel.keys({ gt: [first], lt: [first, '\uffff'] }).all()
  return keys.map(key => key[1])
}

export async function membersOf (db, group) {
  return second(groupUsers(db), group)
}

export async function groupsOf (db, user) {
  return second(userGroups(db), user)
}
