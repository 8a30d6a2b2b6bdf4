// Reference solution: one sublevel per kind, nested comments, and a root
// batch with the `sublevel` option for the write that spans two of them.
const users = (db) => db.sublevel('users', { valueEncoding: 'json' })
const posts = (db) => db.sublevel('posts', { valueEncoding: 'json' })
const comments = (db) => posts(db).sublevel('comments', { valueEncoding: 'json' })

export async function addUser (db, user) {
  await users(db).put(user.id, user)
}

export async function addPostWithComment (db, post, comment) {
  await db.batch([
    { type: 'put', sublevel: posts(db), key: post.id, value: post },
    { type: 'put', sublevel: comments(db), key: comment.id, value: comment }
  ])
}

export async function listUsers (db) {
  return users(db).values().all()
}
