// size-limit hooks called directly on the test kit's fake context.
import t from 'tap'
import { fakeContext } from '../../../testing.ts'
import sizeLimit from '../../../plugins/size-limit/index.ts'

t.test('size-limit – a declared Content-Length over the limit is refused with 413 before the body is read', async t => {
  const hooks = await sizeLimit.create({ maxBytes: 100 }, {} as never)
  await t.rejects(async () => hooks.onRequest!(fakeContext({ headers: { 'content-length': '101' } }), undefined), { code: 'GW_ERR_BODY_TOO_LARGE', statusCode: 413 })
})

t.test('size-limit – otherwise the limit is armed for the streamed body', async t => {
  const hooks = await sizeLimit.create({ maxBytes: 100 }, {} as never)
  for (const headers of [{ 'content-length': '100' }, {}] as Record<string, string>[]) {
    const ctx = fakeContext({ headers })
    await hooks.onRequest!(ctx, undefined)
    t.equal(ctx.seen.bodyLimit, 100)
  }
})
