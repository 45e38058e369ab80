/**
 * @module test/integration/money-cache-write – cache writes billed at the model's `cacheWrite` rate
 * (issues 27 and 28), through a listening gateway whose messages upstream reports
 * `cache_creation_input_tokens`, on SQLite and PostgreSQL: the ledger's charge and the usage
 * record's price, the metrics' cost (the same number), a reservation that covers a call whose whole
 * input is a cache write, and a ledger price with a cache-write rate set through the admin API.
 */
import t, { type Test } from 'tap'
import type { ServerResponse } from 'node:http'
import { startFakeUpstream, json, sse, messagesResponse, messagesTextStream, type FakeUpstream, type Recorded } from '../helpers/fake-upstream.ts'
import { adminCall } from '../helpers/admin.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { cacheModel as model, cacheWriteGateway, checkWholeInputWrite, onBothLedgers, ORG, START } from '../helpers/cache-write.ts'

/** Rates per million tokens, so micro-units per token: a 5-minute cache write at 1.25× input. */
const PRICE = { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 }
/** What the upstream reports: 1000 uncached, 2000 read from the cache, 4000 written to it, 100 out. */
const USAGE = { input: 1000, cacheRead: 2000, cacheWrite: 4000, output: 100 }
const COST = 1000 * 3 + 2000 * 0.3 + 4000 * 3.75 + 100 * 15
/** A context window smaller than the prompt: the reservation's input estimate is exactly this many tokens. */
const SMALL_CONTEXT = 1000
const MAX_TOKENS = 50

/** Answers with USAGE (JSON or stream), or, for the small-context model, with the whole input written to the cache. */
function upstream (gate?: Promise<void>) {
  return async (req: Recorded, res: ServerResponse) => {
    await gate
    const usage = req.body.max_tokens === MAX_TOKENS ? { input: 0, cacheRead: 0, cacheWrite: SMALL_CONTEXT, output: MAX_TOKENS } : USAGE
    if (req.body.stream === true) return sse(res, messagesTextStream(['cached', ' answer'], usage))
    json(res, 200, messagesResponse('cached answer', usage))
  }
}

const gateway = (t: Test, ledger: Ledger, up: FakeUpstream) =>
  cacheWriteGateway(t, ledger, up, [model('a/cached', PRICE), model('a/small', PRICE, SMALL_CONTEXT), model('a/ledger-priced', { input: 3, output: 15 })])

const ask = { max_tokens: 200, messages: [{ role: 'user' as const, content: 'Summarize the cached document.' }] }

async function run (t: Test, makeLedger: (t: Test) => Promise<Ledger>): Promise<void> {
  t.test('cache writes are charged at the cacheWrite rate, JSON and stream; the metrics cost is the charge', async t => {
    const up = await startFakeUpstream(upstream())
    t.teardown(() => up.close())
    const ledger = await makeLedger(t)
    const { url, anthropic, records } = await gateway(t, ledger, up)
    await ledger.topUp(ORG, START)
    const m = await anthropic.messages.create({ model: 'a/cached', ...ask })
    t.same(m.usage.cache_creation_input_tokens, 4000, 'the client sees the cache writes')
    const stream = await anthropic.messages.create({ model: 'a/cached', ...ask, stream: true })
    for await (const _ of stream) { /* drain */ }
    const rs = await records(2)
    t.same(rs.map(r => r.cost), [COST, COST], `each call costs ${COST} µ: 4000 written × 3.75, not × 3`)
    t.same(rs.map(r => r.inputTokens), [7000, 7000], 'input includes the cache reads and writes')
    t.same(rs[0]!.price, PRICE, 'the usage record keeps the cache-write rate applied')
    t.equal((await ledger.getBalance(ORG))!.balance, START - 2 * COST)
    const metrics = await (await fetch(`${url}/metrics`)).text()
    const line = metrics.split('\n').find(l => l.startsWith('gw_cost_total{') && l.includes('model="a/cached"'))
    t.ok(line, 'a cost series for the model')
    t.ok(Math.abs(Number(line!.split(' ').at(-1)) - 2 * COST / 1e6) < 1e-9, `metrics cost ${line} = ledger charges ${2 * COST} µ`)
  })

  t.test('the reservation covers a call whose whole input turns out a cache write', t => checkWholeInputWrite(t, {
    makeLedger, upstream, gateway, model: 'a/small', maxTokens: MAX_TOKENS, worst: SMALL_CONTEXT * PRICE.cacheWrite + MAX_TOKENS * PRICE.output,
    rate: 'cache-write rate (3.75 > 3)',
  }))

  t.test('a ledger price with a cache-write rate set through the admin API is applied', async t => {
    const up = await startFakeUpstream(upstream())
    t.teardown(() => up.close())
    const ledger = await makeLedger(t)
    const { admin, anthropic, records } = await gateway(t, ledger, up)
    await ledger.topUp(ORG, START)
    const set = await adminCall(admin, 'PUT', '/admin/prices', { model: 'a/ledger-priced', input: 3, cachedInput: 0.3, cacheWrite: 6, output: 15 })
    t.equal(set.status, 200)
    t.same(set.body.price, { input: 3, cachedInput: 0.3, cacheWrite: 6, output: 15 }, 'the answer shows the cache-write rate')
    t.same(await ledger.getPrice('a/ledger-priced'), { input: 3, cachedInput: 0.3, cacheWrite: 6, output: 15 }, 'stored in the ledger')
    const list = await adminCall(admin, 'GET', '/admin/prices')
    t.match(list.body.data.find((p: { model: string }) => p.model === 'a/ledger-priced'), { source: 'ledger', ledgerPrice: { cacheWrite: 6 }, configPrice: { input: 3 } })
    const bad = await adminCall(admin, 'PUT', '/admin/prices', { model: 'a/ledger-priced', input: 3, cacheWrite: -1, output: 15 })
    t.equal(bad.status, 400, 'a negative cache-write rate is refused')
    t.same(await ledger.getPrice('a/ledger-priced'), { input: 3, cachedInput: 0.3, cacheWrite: 6, output: 15 }, 'and changes nothing')
    await anthropic.messages.create({ model: 'a/ledger-priced', ...ask })
    const [r] = await records(1)
    t.equal(r!.cost, 1000 * 3 + 2000 * 0.3 + 4000 * 6 + 100 * 15, 'a 1-hour cache write at 2× input, from the ledger price')
    t.same(r!.price, { input: 3, cachedInput: 0.3, cacheWrite: 6, output: 15 })
  })
}

onBothLedgers(t, 't_cw', run)
