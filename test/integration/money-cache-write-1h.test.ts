/**
 * @module test/integration/money-cache-write-1h – writes to a one-hour prompt cache billed at the
 * model's `cacheWrite1h` rate, through a listening gateway whose messages upstream reports
 * `cache_creation.ephemeral_1h_input_tokens`, on SQLite and PostgreSQL: messages and chat clients,
 * JSON and stream; the usage record's price; the reservation covering a call whose whole input is a
 * one-hour write; a price without the rate (the cache-write rate applies); an upstream reporting
 * more one-hour writes than writes; and the rate set through the admin API, bad values refused.
 */
import t, { type Test } from 'tap'
import type { ServerResponse } from 'node:http'
import { startFakeUpstream, json, sse, messagesResponse, messagesTextStream, type FakeUpstream, type MessagesUsageCounts, type Recorded } from '../helpers/fake-upstream.ts'
import { ADMIN_KEY, adminCall } from '../helpers/admin.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { cacheModel as model, cacheWriteGateway, checkWholeInputWrite, onBothLedgers, ORG, START } from '../helpers/cache-write.ts'

/** Rates per million tokens, so micro-units per token: five-minute writes at 1.25× input, one-hour ones at 2×. */
const PRICE = { input: 3, cachedInput: 0.3, cacheWrite: 3.75, cacheWrite1h: 6, output: 15 }
/** 1000 uncached, 2000 read, 4000 written of which 2500 to a one-hour cache, 100 out. */
const USAGE: MessagesUsageCounts = { input: 1000, cacheRead: 2000, cacheWrite: 4000, cacheWrite1h: 2500, output: 100 }
const COST = 1000 * 3 + 2000 * 0.3 + 1500 * 3.75 + 2500 * 6 + 100 * 15
/** A context window smaller than the prompt: the reservation's input estimate is exactly this many tokens. */
const SMALL_CONTEXT = 1000
const MAX_TOKENS = 50
/** The marker of the call whose upstream reports more one-hour writes than writes. */
const OVERSTATED = 77

function upstream (gate?: Promise<void>) {
  return async (req: Recorded, res: ServerResponse) => {
    await gate
    const usage: MessagesUsageCounts = req.body.max_tokens === MAX_TOKENS ? { input: 0, cacheRead: 0, cacheWrite: SMALL_CONTEXT, cacheWrite1h: SMALL_CONTEXT, output: MAX_TOKENS }
      : req.body.max_tokens === OVERSTATED ? { input: 10, cacheRead: 0, cacheWrite: 100, cacheWrite1h: 5000, output: 1 }
        : USAGE
    if (req.body.stream === true) return sse(res, messagesTextStream(['cached', ' answer'], usage))
    json(res, 200, messagesResponse('cached answer', usage))
  }
}

const gateway = (t: Test, ledger: Ledger, up: FakeUpstream) => cacheWriteGateway(t, ledger, up, [
  model('a/hour', PRICE), model('a/small', PRICE, SMALL_CONTEXT),
  model('a/no-hour-rate', { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 }), model('a/ledger-priced', { input: 3, output: 15 }),
])

const ask = { max_tokens: 200, messages: [{ role: 'user' as const, content: 'Summarize the cached document.' }] }

async function run (t: Test, makeLedger: (t: Test) => Promise<Ledger>): Promise<void> {
  t.test('one-hour writes are charged at the cacheWrite1h rate: messages and chat clients, JSON and stream', async t => {
    const up = await startFakeUpstream(upstream())
    t.teardown(() => up.close())
    const ledger = await makeLedger(t)
    const { anthropic, openai, records } = await gateway(t, ledger, up)
    await ledger.topUp(ORG, START)
    const m = await anthropic.messages.create({ model: 'a/hour', ...ask })
    t.same(m.usage.cache_creation, { ephemeral_5m_input_tokens: 1500, ephemeral_1h_input_tokens: 2500 }, 'the messages client sees the writes by lifetime')
    const stream = await anthropic.messages.create({ model: 'a/hour', ...ask, stream: true })
    for await (const _ of stream) { /* drain */ }
    const c = await openai.chat.completions.create({ model: 'a/hour', max_tokens: 200, messages: [{ role: 'user', content: 'Summarize the cached document.' }] })
    t.equal(c.usage?.prompt_tokens, 7000, 'the chat client sees every input token')
    const chatStream = await openai.chat.completions.create({ model: 'a/hour', max_tokens: 200, stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Summarize the cached document.' }] })
    for await (const _ of chatStream) { /* drain */ }
    const rs = await records(4)
    t.same(rs.map(r => r.cost), [COST, COST, COST, COST], `each call costs ${COST} µ: 1500 five-minute writes × 3.75 and 2500 one-hour writes × 6`)
    t.same(rs[0]!.price, PRICE, 'the usage record keeps the one-hour rate applied')
    t.same(rs.map(r => [r.cacheWriteTokens, r.cacheWrite1hTokens]), Array(4).fill([4000, 2500]), 'and the writes it billed, the one-hour part beside them')
    t.equal((await ledger.getBalance(ORG))!.balance, START - 4 * COST)
  })

  t.test('the reservation covers a call whose whole input turns out a one-hour write', t => checkWholeInputWrite(t, {
    makeLedger, upstream, gateway, model: 'a/small', maxTokens: MAX_TOKENS, worst: SMALL_CONTEXT * PRICE.cacheWrite1h + MAX_TOKENS * PRICE.output,
    rate: 'one-hour rate (6 > 3.75 > 3)',
  }))

  t.test('without a cacheWrite1h rate one-hour writes bill at the cacheWrite rate; overstated one-hour counts are held to the writes', async t => {
    const up = await startFakeUpstream(upstream())
    t.teardown(() => up.close())
    const ledger = await makeLedger(t)
    const { anthropic, records } = await gateway(t, ledger, up)
    await ledger.topUp(ORG, START)
    await anthropic.messages.create({ model: 'a/no-hour-rate', ...ask })
    const over = await anthropic.messages.create({ model: 'a/hour', max_tokens: OVERSTATED, messages: ask.messages })
    t.equal(over.usage.cache_creation_input_tokens, 100)
    const rs = await records(2)
    t.equal(rs[0]!.cost, 1000 * 3 + 2000 * 0.3 + 4000 * 3.75 + 100 * 15, 'every write at 3.75')
    t.equal(rs[1]!.cost, 10 * 3 + 100 * 6 + 1 * 15, '5000 one-hour writes reported of 100 writes: 100 billed at 6')
    t.same([rs[1]!.cacheWriteTokens, rs[1]!.cacheWrite1hTokens], [100, 100], 'the record keeps the writes as billed')
  })

  t.test('a ledger price with a one-hour rate set through the admin API is applied; bad rates are refused', async t => {
    const up = await startFakeUpstream(upstream())
    t.teardown(() => up.close())
    const ledger = await makeLedger(t)
    const { admin, anthropic, records } = await gateway(t, ledger, up)
    await ledger.topUp(ORG, START)
    const price = { input: 3, cachedInput: 0.3, cacheWrite: 3.75, cacheWrite1h: 7, output: 15 }
    const set = await adminCall(admin, 'PUT', '/admin/prices', { model: 'a/ledger-priced', ...price })
    t.equal(set.status, 200)
    t.same(set.body.price, price, 'the answer shows the one-hour rate')
    t.same(await ledger.getPrice('a/ledger-priced'), price, 'stored in the ledger')
    const list = await adminCall(admin, 'GET', '/admin/prices')
    t.match(list.body.data.find((p: { model: string }) => p.model === 'a/ledger-priced'), { source: 'ledger', ledgerPrice: { cacheWrite1h: 7 } })
    for (const bad of [-1, 'x', 1.1234567]) {
      const r = await adminCall(admin, 'PUT', '/admin/prices', { model: 'a/ledger-priced', input: 3, cacheWrite1h: bad, output: 15 })
      t.equal(r.status, 400, `cacheWrite1h ${JSON.stringify(bad)} is refused`)
      t.match(r.body, { error: { code: 400, message: /cacheWrite1h/ } }, 'the answer names the field')
    }
    t.same(await ledger.getPrice('a/ledger-priced'), price, 'and changes nothing')
    await anthropic.messages.create({ model: 'a/ledger-priced', ...ask })
    const [r] = await records(1)
    t.equal(r!.cost, 1000 * 3 + 2000 * 0.3 + 1500 * 3.75 + 2500 * 7 + 100 * 15, 'one-hour writes at the ledger\'s 7')
    t.same(r!.price, price)
    const page = await adminCall(admin, 'GET', '/admin/usage')
    t.match(page.body.data[0], { cacheWriteTokens: 4000, cacheWrite1hTokens: 2500, price: { cacheWrite1h: 7 } }, 'the admin API shows the writes and the rate')
    const csv = await fetch(`${admin}/admin/usage/export?format=csv`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
    const [header, row] = (await csv.text()).split('\r\n')
    const cells = Object.fromEntries(header!.split(',').map((h, i) => [h, row!.split(',')[i]]))
    t.match(cells, { priceCacheWrite1h: '7', cacheWriteTokens: '4000', cacheWrite1hTokens: '2500' }, 'so does the CSV export')
  })
}

onBothLedgers(t, 't_cw1h', run)
