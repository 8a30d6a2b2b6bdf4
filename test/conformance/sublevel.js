import { usersSchema } from './index.js'

/** @param {any} test @param {any} common */
export default function (test, common) {
  test(`${common.backend}: db.sublevel() gives your own namespace, with the tuple encoding by name`, async t => {
    const db = await common.open()
    usersSchema(db)
    const scores = db.sublevel('scores', { keyEncoding: 'tuple', valueEncoding: 'json' })
    await scores.put([620, 'alice'], { at: 1 })
    await scores.put([-3.5, 'bob'], { at: 2 })
    await scores.put([620, 'aaron'], { at: 3 })
    t.same(await scores.keys().all(), [[-3.5, 'bob'], [620, 'aaron'], [620, 'alice']], 'tuple order')
    t.same(await scores.keys({ gte: [600], lt: [700] }).all(), [[620, 'aaron'], [620, 'alice']])
    await db.level.put(['root', 1], 'x', { keyEncoding: 'tuple' })
    t.same(await db.level.get(['root', 1], { keyEncoding: 'tuple' }), 'x', 'the root knows the encoding by name')
    for (const name of ['users', 'scores', 'a.b', 'bad name']) {
      try {
        db.sublevel(name)
        t.fail(`accepted ${name}`)
      } catch (err) {
        t.is(err.code, 'LEVELKIT_INVALID', `refuses ${JSON.stringify(name)}`)
      }
    }
    try {
      db.collection('scores')
      t.fail('a model may not take a sublevel\'s name')
    } catch (err) {
      t.is(err.code, 'LEVELKIT_INVALID', 'models and sublevels share one set of names')
    }
    t.ok((await db.check()).ok, 'check() ignores your namespaces')
    await db.close()
  })
}
