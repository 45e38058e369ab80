/**
 * @module test/admin/daily – what the console's daily views read: GET /admin/calls/latency (p50 /
 * p95 of duration and time to first byte per model, from real calls through a listening gateway,
 * a slow streamed model's TTFB below its duration), GET /admin/calls/failed (server errors and
 * refusals, newest first, each kind bounded apart), the recorder's percentile and bounds on its own,
 * GET /admin/usage newest first (cursor pages in that order, SQLite and PostgreSQL) and GET
 * /admin/usage/total (the filter's sums, to the micro-unit); GET /admin/usage/summary grouped by key
 * and by project.
 */
import t, { type Test } from 'tap'
import { startAdmin } from '../../admin/app.ts'
import { CallRecorder, FAILED_KEPT, LATENCY_SAMPLES, quantile } from '../../admin/calls.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { embeddedDefault } from '../../core/config/default-config.ts'
import { AUTH_ENTRY, auth, buildTestApp, listen, TEST_KEY } from '../helpers/build-test-app.ts'
import { ADMIN_KEY, adminCall as call } from '../helpers/admin.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'

const base = embeddedDefault('sk-gw-unused-demo') as { providers: unknown[], models: unknown[] }

async function gatewayWithAdmin (t: Test, ledger?: Ledger) {
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    ...(ledger ? { ledger } : {}),
    doc: {
      providers: [...base.providers, { name: 'down', adapter: 'openai-compatible', config: { baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'sk-x' } }],
      models: [...base.models, { id: 'down/model', deployments: [{ provider: 'down', model: 'm' }] }],
      admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }] },
    },
    env: { ADMIN_KEY },
  })
  const admin = (await startAdmin(app))!.address
  const gateway = await listen(app)
  t.teardown(() => app.close())
  return { app, admin, gateway }
}

t.test('latency per model and the latest failed calls, from real calls', async t => {
  const { admin, gateway } = await gatewayWithAdmin(t)
  const chat = async (key: string, model: string, stream = false): Promise<{ status: number, trace: string | null }> => {
    const r = await fetch(`${gateway}/v1/chat/completions`, {
      method: 'POST', headers: { ...auth(key), 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
    })
    await r.arrayBuffer()
    return { status: r.status, trace: r.headers.get('x-gw-trace-id') }
  }
  let r = await call(admin, 'GET', '/admin/calls/latency')
  t.equal(r.status, 200, r.text)
  t.strictSame(r.body.data, [], 'nothing measured yet')
  for (let i = 0; i < 5; i++) t.equal((await chat(TEST_KEY, 'echo/echo-1')).status, 200)
  t.equal((await chat(TEST_KEY, 'echo/echo-1', true)).status, 200)
  const bad = await chat('sk-gw-not-a-key-000000', 'echo/echo-1')
  t.equal(bad.status, 401)
  const down = await chat(TEST_KEY, 'down/model')
  t.ok(down.status >= 500, `failed upstream: ${down.status}`)

  r = await call(admin, 'GET', '/admin/calls/latency')
  t.equal(r.body.scope, 'replica')
  t.equal(r.body.data.length, 1, 'served calls only: the failed model has no latency row')
  const row = r.body.data[0]
  t.equal(row.model, 'echo/echo-1')
  t.equal(row.calls, 6, 'every served call of the model, the streamed one too')
  t.ok(row.p50Ms > 0 && row.p50Ms <= row.p95Ms, `p50 ${row.p50Ms} <= p95 ${row.p95Ms}`)
  t.ok(row.ttfbP50Ms > 0 && row.ttfbP50Ms <= row.p50Ms && row.ttfbP95Ms <= row.p95Ms, 'time to first byte is within the duration')
  r = await call(admin, 'GET', `/admin/calls/latency?from=${new Date(Date.now() + 60_000).toISOString()}`)
  t.strictSame(r.body.data, [], 'from: only calls at or after it')

  r = await call(admin, 'GET', '/admin/calls/failed')
  t.equal(r.status, 200, r.text)
  t.match(r.body.data, [
    { kind: 'server', route: 'chat', model: 'down/model', organization: 'org-test', status: down.status, code: /^GW_ERR_/, traceId: down.trace },
    { kind: 'client', route: 'chat', model: null, organization: null, keyId: null, status: 401, code: /^GW_ERR_/, traceId: bad.trace },
  ], 'newest first, with the trace id the client got')
  t.equal(r.body.data.length, 2)
  t.ok(Date.parse(r.body.data[0].time) >= Date.parse(r.body.data[1].time))
  r = await call(admin, 'GET', '/admin/calls/failed?kind=server&limit=1')
  t.match(r.body.data, [{ kind: 'server' }])
  t.equal(r.body.data.length, 1)
  r = await call(admin, 'GET', '/admin/calls/failed?kind=other')
  t.equal(r.status, 400)
  t.equal(r.body.error.metadata.path, '/querystring/kind')
  r = await call(admin, 'GET', '/admin/calls/failed?limit=0')
  t.equal(r.status, 400)
  r = await call(admin, 'GET', '/admin/calls/failed', undefined, {})
  t.equal(r.status, 401, 'admin key needed')
})

t.test('the recorder: nearest-rank percentiles, bounded samples and failed calls', async t => {
  t.equal(quantile([], 0.5), 0)
  t.equal(quantile([1, 2, 3, 4], 0.5), 2)
  t.equal(quantile(Array.from({ length: 100 }, (_, i) => i + 1), 0.95), 95)
  t.equal(quantile([7], 0.95), 7)
  let clock = 1_000_000
  const rec = new CallRecorder(() => clock)
  for (let i = 1; i <= LATENCY_SAMPLES + 100; i++) { clock++; rec.sample('m', i, i / 10) }
  const [row] = rec.latency()
  t.equal(row!.calls, LATENCY_SAMPLES, 'the latest samples only')
  t.equal(row!.p50Ms, 100 + LATENCY_SAMPLES / 2, 'the oldest 100 were dropped')
  t.equal(row!.ttfbP95Ms, (100 + LATENCY_SAMPLES * 0.95) / 10)
  const fail = (kind: 'server' | 'client', n: number) => rec.fail({ time: clock++, kind, route: 'chat', model: null, organization: null, keyId: null, status: kind === 'server' ? 502 : 401, code: null, message: null, traceId: `${kind}-${n}`, durationMs: 1 })
  for (let i = 0; i < 3; i++) fail('server', i)
  for (let i = 0; i < FAILED_KEPT * 3; i++) fail('client', i)
  t.equal(rec.failed('server', 200).length, 3, 'refusals cannot push server errors out')
  t.equal(rec.failed('client', 200).length, FAILED_KEPT, 'each kind is bounded')
  t.equal(rec.failed('client', 1)[0]!.traceId, `client-${FAILED_KEPT * 3 - 1}`, 'newest first')
})

const usage = (i: number, time: number, organization: string, cost: number): UsageRecord => ({
  time, keyId: 'k', organization, model: 'echo/echo-1', provider: 'echo', traceId: `t-${i}`,
  inputTokens: 10 * i, cachedInputTokens: i, outputTokens: i, cost, estimated: false,
})

async function usageOrderAndTotal (t: Test, ledger: Ledger) {
  const { admin } = await gatewayWithAdmin(t, ledger)
  const now = Date.now()
  await ledger.createOrganization('acme')
  await ledger.createOrganization('globex')
  // Two records share a time: the id breaks the tie in both orders.
  const recs = [usage(1, now - 5 * 86_400_000, 'acme', 1_000_001), usage(2, now - 3_600_000, 'acme', 2_500_000), { ...usage(3, now - 3_600_000, 'globex', 7), keyId: 'k2', project: 'web' }, usage(4, now - 1000, 'acme', 3)]
  for (const u of recs) await ledger.charge(undefined, u)
  let r = await call(admin, 'GET', '/admin/usage?order=desc&limit=3')
  t.equal(r.status, 200, r.text)
  t.strictSame(r.body.data.map((u: { traceId: string }) => u.traceId), ['t-4', 't-3', 't-2'], 'newest first')
  r = await call(admin, 'GET', `/admin/usage?order=desc&limit=3&cursor=${r.body.nextCursor}`)
  t.strictSame(r.body.data.map((u: { traceId: string }) => u.traceId), ['t-1'], 'the next page goes on back in time')
  t.equal(r.body.nextCursor, null)
  r = await call(admin, 'GET', '/admin/usage?limit=2')
  t.strictSame(r.body.data.map((u: { traceId: string }) => u.traceId), ['t-1', 't-2'], 'oldest first by default')
  r = await call(admin, 'GET', '/admin/usage?order=sideways')
  t.equal(r.status, 400)
  t.equal(r.body.error.metadata.path, '/querystring/order')

  // Spend per key and per project (the ledger's GROUP BY).
  const from = new Date(now - 10 * 86_400_000).toISOString()
  r = await call(admin, 'GET', `/admin/usage/summary?from=${from}&bucket=day&groupBy=key`)
  t.equal(r.status, 200, r.text)
  t.strictSame(r.body.groups.map((g: { key: string | null, requests: number, cost: string }) => [g.key, g.requests, g.cost]), [['k', 3, '3.500004'], ['k2', 1, '0.000007']], 'per key, the largest spend first')
  r = await call(admin, 'GET', `/admin/usage/summary?from=${from}&bucket=day&groupBy=project`)
  t.strictSame(r.body.groups.map((g: { key: string | null, requests: number, cost: string }) => [g.key, g.requests, g.cost]), [[null, 3, '3.500004'], ['web', 1, '0.000007']], 'per project, the largest spend first; records without one under null')
  r = await call(admin, 'GET', `/admin/calls/summary?from=${from}&bucket=day&groupBy=key`)
  t.equal(r.status, 400, 'the calls recorder groups by model or organization only')

  r = await call(admin, 'GET', '/admin/usage/total')
  t.equal(r.status, 200, r.text)
  t.strictSame(r.body, { requests: 4, inputTokens: 100, cachedInputTokens: 10, cacheWriteTokens: 0, cacheWrite1hTokens: 0, outputTokens: 10, cost: '3.500011' }, 'every record, to the micro-unit')
  r = await call(admin, 'GET', `/admin/usage/total?organization=acme&from=${new Date(now - 86_400_000).toISOString()}`)
  t.strictSame(r.body, { requests: 2, inputTokens: 60, cachedInputTokens: 6, cacheWriteTokens: 0, cacheWrite1hTokens: 0, outputTokens: 6, cost: '2.500003' }, 'the filter\'s records only')
  r = await call(admin, 'GET', '/admin/usage/total?organization=nobody')
  t.strictSame(r.body, { requests: 0, inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0, outputTokens: 0, cost: '0.000000' })
  r = await call(admin, 'GET', `/admin/usage/total?from=${new Date(now).toISOString()}&to=${new Date(now - 1000).toISOString()}`)
  t.equal(r.status, 400)
  t.equal(r.body.error.metadata.path, '/querystring/from')
}

t.test('usage newest first and totals: SQLite', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  await usageOrderAndTotal(t, ledger)
})

t.test('usage newest first and totals: PostgreSQL', async t => {
  const url = process.env.DATABASE_URL
  if (!url) {
    if (process.env.CI === 'true') t.fail('DATABASE_URL is not set')
    else t.plan(0, 'DATABASE_URL is not set')
    return
  }
  const ledger = await pgLedgers(t, url, 'admin_daily')(t)
  await usageOrderAndTotal(t, ledger)
})
