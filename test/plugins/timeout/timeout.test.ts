// timeout hooks called directly on the test kit's fake context.
import t from 'tap'
import { fakeContext } from '../../../testing.ts'
import timeout from '../../../plugins/timeout/index.ts'

t.test('timeout – arms the call\'s deadline with the configured time', async t => {
  const hooks = await timeout.create({ timeoutMs: 2500 }, {} as never)
  const ctx = fakeContext()
  await hooks.onRequest!(ctx, undefined)
  t.equal(ctx.seen.deadlineMs, 2500)
  t.equal(ctx.deadlineMs, 2500)
})
