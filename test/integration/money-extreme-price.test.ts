/**
 * @module test/integration/money-extreme-price – a price so high that a call's cost passes the
 * largest exact amount of micro-units (an operator's typo, or a currency of small units): the
 * call is still charged, at most that amount, with its usage record, and its hold is released, so
 * the organization's next call is not refused for a hold that never settles. Through a listening
 * gateway and the official openai SDK, with the balance plugin enforcing.
 */
import t from 'tap'
import OpenAI from 'openai'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, chatCompletion } from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { MAX_MICROS } from '../../core/ledger/ledger.ts'
import { until } from '../helpers/until.ts'

const ORG = 'org-test'

t.test('a cost past MAX_MICROS is charged as MAX_MICROS; the hold is released', async t => {
  const up = await startFakeUpstream((_req, res) => json(res, 200, chatCompletion('ok', { prompt: 1_000_000, completion: 1, cached: 0 })))
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  // Enough for the reservation of a short prompt (its bound times the input price), far from the answer's cost.
  await ledger.topUp(ORG, 1e15)
  const app = await buildTestApp({
    ledger,
    pipeline: [AUTH_ENTRY, { plugin: 'balance' }],
    doc: {
      providers: [{ name: 'up', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/v1`, apiKey: 'sk-up' } }],
      models: [{ id: 'v/dear', price: { input: 1e10, output: 1 }, deployments: [{ provider: 'up', model: 'up-model' }] }],
    },
  })
  t.teardown(async () => { await app.close(); await up.close(); await ledger.close() })
  const client = new OpenAI({ baseURL: `${await listen(app)}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const answer = await client.chat.completions.create({ model: 'v/dear', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] })
  t.equal(answer.choices[0]!.message.content, 'ok')
  // 1 000 000 input tokens at 1e10 micro-units each: 1e16, past 2^53.
  await until(async () => (await ledger.listUsage({})).length === 1)
  const [rec] = await ledger.listUsage({})
  t.equal(rec!.cost, MAX_MICROS, 'charged the largest exact amount')
  t.ok(Number.isSafeInteger((await ledger.getBalance(ORG))!.balance), 'the balance stays an exact amount')
  t.equal((await ledger.getBalance(ORG))!.reserved ?? 0, 0, 'no hold left')
})
