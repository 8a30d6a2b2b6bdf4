import { rejects } from './index.js'

/** @param {any} test @param {any} common */
export default function (test, common) {
  test(`${common.backend}: counters`, async t => {
    const db = await common.open()
    const hits = db.counter('hits')
    t.is(await hits.get('home'), 0)
    t.is(await hits.add('home'), 1)
    t.is(await hits.add('home', 5), 6)
    t.is(await hits.add(['page', 2], -3), -3, 'tuple keys and negative deltas')
    t.same(await Promise.all([hits.add('x'), hits.add('x'), hits.add('x')]), [1, 2, 3], 'concurrent adds are serialized')
    await rejects(t, hits.add('home', 1.5), 'LEVELKIT_INVALID')
    await rejects(t, hits.add('home', Number.MAX_SAFE_INTEGER), 'LEVELKIT_INVALID', 'overflow refused')
    t.is(await hits.get('home'), 6)
    await db.close()
  })
}
