/**
 * @module test/integration/one-cost – one cost per call: the access log's `cost` and the metrics'
 * `gw_cost_total` are what the ledger charged (its usage record's amount, the same micro-units)
 * whenever a billing plugin charged the call, on SQLite and PostgreSQL, through a listening gateway
 * and the official `openai` SDK: a ledger price set with the admin API (2/10) over the catalog's
 * (3/15), calls streamed and not, a stream the upstream cuts (billed estimate), many calls at once,
 * and the usage sums the console reads. A call no plugin charged says so (`costBasis: catalog`);
 * a third-party billing plugin reports its charge through `ctx.reportCharge()`, whose bad
 * arguments are refused.
 */
import t, { type Test } from 'tap'
import OpenAI from 'openai'
import pino from 'pino'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import type { ServerResponse } from 'node:http'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, sse, chatCompletion, chatTextStream, type Recorded } from '../helpers/fake-upstream.ts'
import { ADMIN_KEY, adminCall } from '../helpers/admin.ts'
import { startAdmin } from '../../admin/app.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { definePlugin, type GatewayPlugin } from '../../core/pipeline/plugin.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import { until } from '../helpers/until.ts'
import { Type } from '@sinclair/typebox'

const ORG = 'org-test'
const MODEL = 'v/priced'
/** The catalog's price, and the one an operator sets in the ledger over it (per million tokens: micro-units per token). */
const CATALOG = { input: 3, output: 15 }
const LEDGER = { input: 2, output: 10 }
/** What the upstream reports for a whole answer. */
const USAGE = { prompt: 4, completion: 3, cached: 0 }
/** The reproduced case: the ledger charges 38 µ, the catalog price makes it 57 µ. */
const CHARGED = USAGE.prompt * LEDGER.input + USAGE.completion * LEDGER.output
const LIST = USAGE.prompt * CATALOG.input + USAGE.completion * CATALOG.output
const PIECES = Array.from({ length: 40 }, () => 'abcd')

type Line = { msg?: string, reqId?: string, cost?: number, costBasis?: string, listCost?: number, usageEstimated?: boolean, status?: number, [k: string]: unknown }

/** Answers a whole completion, a stream, or (a user message "cut") a stream cut after 10 pieces. */
function upstream (req: Recorded, res: ServerResponse): Promise<void> | void {
  const cut = JSON.stringify(req.body.messages).includes('cut')
  if (req.body.stream !== true) return json(res, 200, chatCompletion('an answer', USAGE))
  return sse(res, chatTextStream(PIECES, USAGE), cut ? { cutAfter: 11, delayMs: 1 } : {})
}

interface Gw { url: string, admin: string, client: OpenAI, lines: Line[], ledger: Ledger }

async function gateway (t: Test, ledger: Ledger, pipeline: unknown[], plugins: GatewayPlugin[] = []): Promise<Gw> {
  const up = await startFakeUpstream(upstream)
  const lines: Line[] = []
  const logger = pino({ level: 'info' }, { write (s: string) { lines.push(JSON.parse(s)) } })
  const app = await buildTestApp({
    ledger,
    logger,
    plugins,
    pipeline: [AUTH_ENTRY, ...pipeline],
    env: { ADMIN_KEY },
    doc: {
      logging: { level: 'info' },
      metrics: { listen: 'main' },
      admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }] },
      providers: [{ name: 'up-chat', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/v1`, apiKey: 'sk-up' } }],
      models: [{ id: MODEL, price: CATALOG, supported_parameters: ['max_tokens', 'stream'], deployments: [{ provider: 'up-chat', model: 'up-model' }] }],
    },
  })
  t.teardown(async () => { await app.close(); await up.close() })
  const admin = (await startAdmin(app))!.address
  const url = await listen(app)
  return { url, admin, lines, ledger, client: new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 }) }
}

/** A billed gateway whose ledger prices MODEL at LEDGER, set through the admin API. */
async function billed (t: Test, ledger: Ledger, balance: Record<string, unknown> = {}): Promise<Gw> {
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, 1_000_000_000)
  const gw = await gateway(t, ledger, [{ plugin: 'balance', config: balance }])
  const set = await adminCall(gw.admin, 'PUT', '/admin/prices', { model: MODEL, ...LEDGER })
  t.equal(set.status, 200, 'the admin API sets the ledger price')
  return gw
}

async function recordOf (t: Test, ledger: Ledger, traceId: string): Promise<UsageRecord> {
  const find = async () => (await ledger.listUsage({})).find(r => r.traceId === traceId)
  t.ok(await until(async () => (await find()) !== undefined), 'the usage record was written')
  return (await find())!
}

async function accessOf (t: Test, gw: Gw, traceId: string): Promise<Line> {
  const find = () => gw.lines.find(l => l.msg === 'access' && l.reqId === traceId)
  t.ok(await until(() => find() !== undefined), 'the access line was written')
  return find()!
}

/** gw_cost_total of MODEL by basis (currency units). */
async function metricCost (gw: Gw): Promise<Record<string, number>> {
  const families = parsePrometheusTextFormat(await (await fetch(`${gw.url}/metrics`)).text())
  const out: Record<string, number> = {}
  for (const m of families.find(f => f.name === 'gw_cost_total')?.metrics ?? []) {
    if (m.labels?.model === MODEL) out[m.labels.basis ?? ''] = (out[m.labels.basis ?? ''] ?? 0) + Number(m.value)
  }
  return out
}

/** The ledger's sum for MODEL as GET /admin/usage/total reports it (what the console shows as spend). */
async function usageTotal (gw: Gw): Promise<string> {
  const r = await adminCall(gw.admin, 'GET', `/admin/usage/total?model=${encodeURIComponent(MODEL)}`)
  return r.body.cost
}

const micros = (m: number): string => (m / 1e6).toFixed(6)
const ask = (text = 'Say something.') => ({ model: MODEL, messages: [{ role: 'user' as const, content: text }] })
const listOf = (r: UsageRecord) => ((r.inputTokens - r.cachedInputTokens) * CATALOG.input + r.outputTokens * CATALOG.output) / 1e6

/** The record, the access line, the metrics and the usage sums say the same amount. */
async function sameCost (t: Test, gw: Gw, traceId: string): Promise<UsageRecord> {
  const rec = await recordOf(t, gw.ledger, traceId)
  const line = await accessOf(t, gw, traceId)
  t.equal(line.cost, rec.cost / 1e6, `the access log's cost is the charge (${rec.cost} µ)`)
  t.equal(line.costBasis, 'charged')
  t.equal(line.listCost, listOf(rec), 'listCost: the same usage at the catalog price')
  t.equal(line.usageEstimated, rec.estimated)
  const m = await metricCost(gw)
  t.ok(Math.abs(m.charged - rec.cost / 1e6) < 1e-12, `gw_cost_total ${m.charged} = the charge`)
  t.equal(m.catalog, undefined, 'nothing counted at the catalog price')
  t.equal(await usageTotal(gw), micros(rec.cost), 'the usage sums (console spend) read the same amount')
  return rec
}

async function run (t: Test, makeLedger: (t: Test) => Promise<Ledger>, lease: boolean): Promise<void> {
  t.test('not streamed: the ledger charges 2/10 and the log and metrics say so', async t => {
    const gw = await billed(t, await makeLedger(t))
    const { data, response } = await gw.client.chat.completions.create(ask()).withResponse()
    t.equal(data.usage?.prompt_tokens, USAGE.prompt)
    const rec = await sameCost(t, gw, response.headers.get('x-gw-trace-id')!)
    t.equal(rec.cost, CHARGED, `${CHARGED} µ at the ledger price, not ${LIST} µ at the catalog's`)
    t.equal((await accessOf(t, gw, rec.traceId)).listCost, LIST / 1e6)
  })

  t.test('streamed: the same', async t => {
    const gw = await billed(t, await makeLedger(t))
    const { data: stream, response } = await gw.client.chat.completions.create({ ...ask(), stream: true }).withResponse()
    let text = ''
    for await (const c of stream) text += c.choices[0]?.delta?.content ?? ''
    t.equal(text, PIECES.join(''))
    const rec = await sameCost(t, gw, response.headers.get('x-gw-trace-id')!)
    t.match(rec, { cost: CHARGED, estimated: false })
  })

  t.test('a stream the upstream cuts: the estimate billed is the cost logged', async t => {
    const gw = await billed(t, await makeLedger(t))
    const { data: stream, response } = await gw.client.chat.completions.create({ ...ask('please cut'), stream: true }).withResponse()
    let text = ''
    const err = await (async () => { for await (const c of stream) text += c.choices[0]?.delta?.content ?? '' })().catch(e => e)
    t.ok(err instanceof Error, 'the SDK sees the stream fail')
    t.ok(text.length > 0 && text.length < PIECES.join('').length, 'after part of the answer')
    const rec = await sameCost(t, gw, response.headers.get('x-gw-trace-id')!)
    t.equal(rec.estimated, true)
    t.equal(rec.cost, rec.inputTokens * LEDGER.input + rec.outputTokens * LEDGER.output, 'the estimate at the ledger price')
  })

  t.test(`many calls at once${lease ? ' (lease mode)' : ''}: the sums agree`, async t => {
    const gw = await billed(t, await makeLedger(t), lease ? { mode: 'lease' } : {})
    const N = 24
    const ids = await Promise.all(Array.from({ length: N }, async (_, i) => {
      if (i % 2 === 0) return (await gw.client.chat.completions.create(ask()).withResponse()).response.headers.get('x-gw-trace-id')!
      const { data, response } = await gw.client.chat.completions.create({ ...ask(), stream: true }).withResponse()
      for await (const _ of data) { /* drain */ }
      return response.headers.get('x-gw-trace-id')!
    }))
    const recs = await Promise.all(ids.map(id => recordOf(t, gw.ledger, id)))
    const lines = await Promise.all(ids.map(id => accessOf(t, gw, id)))
    const charged = recs.reduce((s, r) => s + r.cost, 0)
    t.equal(charged, N * CHARGED)
    t.ok(lines.every((l, i) => l.cost === recs[i].cost / 1e6 && l.costBasis === 'charged'), 'every line logs its own charge')
    t.ok(Math.abs((await metricCost(gw)).charged - charged / 1e6) < 1e-9, 'gw_cost_total = the sum of the charges')
    t.equal(await usageTotal(gw), micros(charged))
  })
}

/** A fresh in-memory SQLite ledger, closed with `t`. */
async function memory (t: Test): Promise<Ledger> {
  const l = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await l.migrate()
  t.teardown(() => l.close())
  return l
}

t.test('SQLite ledger', t => run(t, memory, false))

t.test('PostgreSQL ledger', async t => {
  const url = await databaseUrl(t)
  if (url === undefined) return
  const ledgers = pgLedgers(t, url, 't_onecost')
  await run(t, ledgers, false)
  t.test('lease mode', t => run(t, ledgers, true))
})

t.test('no billing plugin: the cost is at the catalog price, and says so', async t => {
  const gw = await gateway(t, await memory(t), [])
  const { response } = await gw.client.chat.completions.create(ask()).withResponse()
  const line = await accessOf(t, gw, response.headers.get('x-gw-trace-id')!)
  t.match(line, { cost: LIST / 1e6, costBasis: 'catalog', listCost: LIST / 1e6 })
  t.same(await metricCost(gw), { catalog: LIST / 1e6 })
})

t.test('a call that failed with no usage has no cost', async t => {
  const gw = await billed(t, await memory(t))
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'v/unknown', messages: [] }),
  })
  t.equal(r.status, 404)
  const line = await accessOf(t, gw, r.headers.get('x-gw-trace-id')!)
  t.equal(line.cost, undefined)
  t.equal(line.costBasis, undefined)
  t.equal(line.listCost, undefined)
})

/** A third-party billing plugin: a flat fee per call, reported as the call's charge. */
const flatFee = (fee: unknown, seen: unknown[] = []) => definePlugin({
  name: 'flat-fee',
  phase: 'admit',
  configSchema: Type.Object({}, { additionalProperties: false }),
  create: () => ({
    onSettle (ctx) {
      try {
        ctx.reportCharge(fee as number)
      } catch (err) {
        seen.push(err)
        throw err
      }
    },
  }),
})

t.test('a third-party billing plugin reports its charge with ctx.reportCharge()', async t => {
  const gw = await gateway(t, await memory(t), [{ plugin: 'flat-fee' }], [flatFee(1234) as GatewayPlugin])
  const { response } = await gw.client.chat.completions.create(ask()).withResponse()
  const line = await accessOf(t, gw, response.headers.get('x-gw-trace-id')!)
  t.match(line, { cost: 0.001234, costBasis: 'charged', listCost: LIST / 1e6 })
  t.same(await metricCost(gw), { charged: 0.001234 })
})

t.test('ctx.reportCharge() refuses anything but whole non-negative micro-units', async t => {
  for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '12', undefined]) {
    t.test(String(bad), async t => {
      const seen: unknown[] = []
      const gw = await gateway(t, await memory(t), [{ plugin: 'flat-fee' }], [flatFee(bad, seen) as GatewayPlugin])
      const { response } = await gw.client.chat.completions.create(ask()).withResponse()
      const line = await accessOf(t, gw, response.headers.get('x-gw-trace-id')!)
      t.equal(seen.length, 1)
      t.ok(seen[0] instanceof TypeError, 'a TypeError')
      t.match((seen[0] as Error).message, /reportCharge.*micro-units/, 'that names the rule')
      t.match(line, { status: 200, cost: LIST / 1e6, costBasis: 'catalog' }, 'the call is not counted as charged')
    })
  }
})
