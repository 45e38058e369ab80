/**
 * @module test/plugins/auth/last-used – ledger keys' last-used times are coalesced in memory and
 * written in batches, never one write per call: 200 calls of 3 keys through a listening gateway
 * make a handful of touchKeys writes holding each key's latest time; a failed write keeps its
 * times for the next one; close() writes what is left. Config keys with a past expiry or a model
 * pattern are answered as ledger keys are.
 */
import t from 'tap'
import pino from 'pino'
import { openLedger } from '../../../core/ledger/index.ts'
import type { KeyLookup } from '../../../core/ledger/ledger.ts'
import { LastUsed } from '../../../plugins/auth/principal.ts'
import { buildTestApp, listen, auth } from '../../helpers/build-test-app.ts'

t.test('last-used times: batched, latest per key, kept when a write fails, flushed at close', async t => {
  const writes: Array<Map<string, number>> = []
  let fail = false
  const keys: KeyLookup = {
    ping: async () => true,
    findKeyByHash: async () => undefined,
    touchKeys: async used => { if (fail) throw new Error('down'); writes.push(new Map(used)) },
  }
  const lu = new LastUsed(keys, 60_000, pino({ level: 'silent' }))
  for (let i = 0; i < 300; i++) lu.used(`k${i % 3}`, 1000 + i)
  await lu.flush()
  t.equal(writes.length, 1, '300 uses: one write')
  t.same([...writes[0]!], [['k0', 1297], ['k1', 1298], ['k2', 1299]], 'each key\'s latest time')
  fail = true
  lu.used('k0', 2000)
  await lu.flush()
  fail = false
  lu.used('k1', 2001)
  await lu.close()
  t.same([...writes[1]!].sort(), [['k0', 2000], ['k1', 2001]], 'a failed write\'s times go with the next one, at close')
})

t.test('through a gateway: one write per interval, not per call', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  await ledger.createOrganization('acme')
  const secret = 'sk-gw-last-used-000000000001'
  const { hashKey } = await import('../../../core/ledger/keys.ts')
  await ledger.createKey({ id: 'lu', hash: hashKey(secret), prefix: 'sk-gw-last', organization: 'acme' })
  let touches = 0
  const touch = ledger.touchKeys!.bind(ledger)
  ledger.touchKeys = async used => { touches++; return touch(used) }
  const app = await buildTestApp({
    ledger,
    pipeline: [{ plugin: 'auth', config: { lastUsedFlushMs: 200, keys: [
      { key: 'sk-gw-expired-cfg-0001', id: 'old', expiresAt: '2020-01-01' },
      { key: 'sk-gw-pattern-cfg-0001', id: 'pat', models: ['msgvendor/*'] },
    ] } }],
  })
  t.teardown(() => app.close())
  const url = await listen(app)
  const post = (key: string, model = 'echo/echo-1') => fetch(`${url}/v1/chat/completions`, {
    method: 'POST', headers: { ...auth(key), 'content-type': 'application/json' }, body: JSON.stringify({ model, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
  }).then(async r => { await r.arrayBuffer(); return r.status })
  const before = Date.now()
  const statuses = await Promise.all(Array.from({ length: 100 }, () => post(secret)))
  t.ok(statuses.every(s => s === 200))
  await new Promise(resolve => setTimeout(resolve, 500))
  t.ok(touches >= 1 && touches <= 4, `${touches} writes for 100 calls`)
  const k = (await ledger.listKeys())[0]!
  t.ok(k.lastUsedAt! >= before && k.lastUsedAt! <= Date.now(), 'the latest use')
  t.equal(await post('sk-gw-expired-cfg-0001'), 401, 'a config key past its expiresAt: 401')
  t.equal(await post('sk-gw-pattern-cfg-0001'), 404, 'a config key\'s pattern: other models 404')
  t.equal(await post('sk-gw-pattern-cfg-0001', 'msgvendor/echo-1'), 200, 'and its models served')
})
