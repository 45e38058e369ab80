// Unit test with the gateway's test kit: the hook called directly on a fake context.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fakeContext, pluginDeps } from 'model-gateway/testing'
import { isGatewayError } from 'model-gateway'
import plugin from './index.js'

const hooks = await plugin.create({ header: 'x-tenant', tenants: ['blue'] }, pluginDeps(plugin))
const { onRequest } = hooks
const newState = plugin.state
if (!onRequest || !newState) throw new Error('tenant-check defines onRequest and state()')

test('tenant-check – passes an allowed tenant, keeps it in its state and echoes it', async () => {
  const ctx = fakeContext({ headers: { 'x-tenant': 'blue' } })
  const state = newState()
  await onRequest(ctx, state)
  assert.equal(state.tenant, 'blue')
  assert.equal(ctx.seen.headers['x-tenant-checked'], 'blue')
})

test('tenant-check – rejects a missing or unknown tenant with its own 403 code', async () => {
  /** @type {Record<string, string>[]} */
  const cases = [{}, { 'x-tenant': 'red' }]
  for (const headers of cases) {
    await assert.rejects(async () => onRequest(fakeContext({ headers }), newState()), err => {
      assert.ok(isGatewayError(err))
      assert.equal(err.statusCode, 403)
      assert.equal(err.code, 'TENANT_NOT_ALLOWED')
      return true
    })
  }
})
