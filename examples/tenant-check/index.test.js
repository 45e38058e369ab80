// Unit test with the gateway's test kit: the hook called directly on a fake context.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fakeContext } from 'model-gateway/testing'
import { isGatewayError } from 'model-gateway'
import plugin, { REASON } from './index.js'

const hooks = await plugin.create({ header: 'x-tenant', tenants: ['blue'] }, /** @type {any} */ ({}))

test('tenant-check – passes an allowed tenant and echoes it', async () => {
  const ctx = fakeContext({ headers: { 'x-tenant': 'blue' }, plugins: ['tenant-check'] })
  await hooks.onRequest?.(ctx)
  assert.equal(ctx.state['tenant-check'], 'blue')
  assert.equal(ctx.seen.headers['x-tenant-checked'], 'blue')
})

test('tenant-check – rejects a missing or unknown tenant with a 400 and its reason', async () => {
  for (const headers of [{}, { 'x-tenant': 'red' }]) {
    await assert.rejects(hooks.onRequest?.(fakeContext({ headers, plugins: ['tenant-check'] })), err => {
      assert.ok(isGatewayError(err))
      assert.equal(err.statusCode, 400)
      assert.equal(err.metadata?.reason, REASON)
      return true
    })
  }
})
