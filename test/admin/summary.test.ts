/**
 * @module test/admin/summary – GET /admin/usage/summary (the ledger's GROUP BY sums, on SQLite and
 * PostgreSQL) through a listening admin API: buckets, groups, the top-N fold, exact money with
 * many charges in flight, filters, bad input.
 */
import t, { type Test } from 'tap'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { formatMicros } from '../../money/billing.ts'
import { adminCall as call, running } from '../helpers/admin.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'

const T0 = Date.UTC(2025, 2, 1, 10, 0)
const MIN = 60_000
const iso = (ms: number): string => new Date(ms).toISOString()

function record (over: Partial<UsageRecord> & { traceId: string, time: number }): UsageRecord {
  return {
    keyId: 'k1', organization: 'acme', project: 'web', model: 'echo/echo-1', provider: 'echo',
    inputTokens: 10, cachedInputTokens: 1, outputTokens: 5, cost: 1, estimated: false, ...over,
  }
}

async function suite (t: Test, makeLedger: (t: Test) => Promise<Ledger>): Promise<void> {
  t.test('buckets, groups and the top-N fold, money exact to the micro-unit', async t => {
    const ledger = await makeLedger(t)
    const { admin } = await running(t, ledger)
    await ledger.createOrganization('acme')
    await ledger.createOrganization('globex')
    const rows = [
      record({ traceId: 'a1', time: T0 + 1, cost: 1, cacheWriteTokens: 4, cacheWrite1hTokens: 3 }),
      record({ traceId: 'a2', time: T0 + 2, cost: 2, cacheWriteTokens: 2, cacheWrite1hTokens: 0 }),
      record({ traceId: 'a3', time: T0 + 59_999, cost: 1_000_000 }),
      record({ traceId: 'g1', time: T0 + MIN, organization: 'globex', model: 'echo/echo-text', cost: 5_000_000_123, cacheWriteTokens: 7, cacheWrite1hTokens: 7 }),
      record({ traceId: 'g2', time: T0 + MIN + 5, organization: 'globex', model: 'echo/echo-text', cost: 5_000_000_123 }),
      record({ traceId: 'n1', time: T0 + MIN + 9, organization: undefined, cost: 7 }),
      record({ traceId: 'late', time: T0 + 2 * MIN, cost: 99 }), // at `to`: outside [from, to)
    ]
    await Promise.all(rows.map(r => ledger.charge(undefined, r)))
    const range = `from=${iso(T0)}&to=${iso(T0 + 2 * MIN)}`

    let r = await call(admin, 'GET', `/admin/usage/summary?${range}&bucket=minute`)
    t.equal(r.status, 200, r.text)
    // Cache writes are summed as well; the records without them (as written before they were kept) add none.
    t.strictSame(r.body.total, { requests: 6, inputTokens: 60, cachedInputTokens: 6, cacheWriteTokens: 13, cacheWrite1hTokens: 10, outputTokens: 30, cost: '10001.000256' })
    t.strictSame(r.body.series, [
      { time: iso(T0), key: null, other: false, requests: 3, inputTokens: 30, cachedInputTokens: 3, cacheWriteTokens: 6, cacheWrite1hTokens: 3, outputTokens: 15, cost: '1.000003' },
      { time: iso(T0 + MIN), key: null, other: false, requests: 3, inputTokens: 30, cachedInputTokens: 3, cacheWriteTokens: 7, cacheWrite1hTokens: 7, outputTokens: 15, cost: '10000.000253' },
    ])
    t.match(r.body, { from: iso(T0), to: iso(T0 + 2 * MIN), bucket: 'minute', groupBy: null })

    r = await call(admin, 'GET', `/admin/usage/summary?${range}&bucket=minute&groupBy=organization`)
    t.strictSame(r.body.groups.map((g: { key: string | null, requests: number, cost: string }) => [g.key, g.requests, g.cost]), [['globex', 2, '10000.000246'], ['acme', 3, '1.000003'], [null, 1, '0.000007']], 'largest cost first; no organization is null')
    t.equal(r.body.series.length, 3)

    r = await call(admin, 'GET', `/admin/usage/summary?${range}&bucket=minute&groupBy=organization&top=1`)
    const series = r.body.series.map((e: { time: string, key: string | null, other: boolean, requests: number, cost: string }) => [e.time, e.key, e.other, e.requests, e.cost])
    t.strictSame(series.sort(), [
      [iso(T0), null, true, 3, '1.000003'],
      [iso(T0 + MIN), 'globex', false, 2, '10000.000246'],
      [iso(T0 + MIN), null, true, 1, '0.000007'],
    ].sort(), 'groups past top are summed per bucket into entries marked other')
    t.equal(r.body.groups.length, 3, 'the group totals list every group')

    r = await call(admin, 'GET', `/admin/usage/summary?${range}&bucket=hour&groupBy=model&organization=acme`)
    t.strictSame(r.body.groups.map((g: { key: string | null, requests: number, cost: string }) => [g.key, g.requests, g.cost]), [['echo/echo-1', 3, '1.000003']], 'filtered by organization')
    t.strictSame(r.body.series.map((e: { time: string }) => e.time), [iso(T0)], 'one hour bucket')
  })

  t.test('200 charges in flight: every sum equals the ledger\'s records to the micro-unit', async t => {
    const ledger = await makeLedger(t)
    const { admin } = await running(t, ledger)
    const records = Array.from({ length: 200 }, (_, i) => record({
      traceId: `c${i}`, time: T0 + (i * 7919) % 3_600_000, organization: ['acme', 'globex', 'initech'][i % 3], model: i % 2 ? 'echo/echo-1' : 'echo/echo-text',
      cost: (i * 104_729) % 9_999_991 + (i % 17 === 0 ? 3_000_000_000_000 : 0), inputTokens: i, outputTokens: 2 * i,
    }))
    await Promise.all(records.map(r => ledger.charge(undefined, r)))
    const sum = (rs: UsageRecord[]): number => rs.reduce((a, r) => a + r.cost, 0)
    for (const bucket of ['minute', 'hour'] as const) {
      for (const groupBy of ['', 'model', 'organization'] as const) {
        const r = await call(admin, 'GET', `/admin/usage/summary?from=${iso(T0)}&to=${iso(T0 + 3_600_000)}&bucket=${bucket}${groupBy ? `&groupBy=${groupBy}&top=100` : ''}`)
        t.equal(r.status, 200, r.text)
        t.equal(r.body.total.cost, formatMicros(sum(records)), `${bucket}/${groupBy || 'total'}: total cost`)
        t.equal(r.body.total.requests, 200)
        t.equal(r.body.total.outputTokens, records.reduce((a, r) => a + r.outputTokens, 0))
        const seriesMicros = r.body.series.reduce((a: bigint, e: any) => a + BigInt(e.cost.replace('.', '')), 0n)
        t.equal(seriesMicros, BigInt(sum(records)), `${bucket}/${groupBy || 'total'}: the series add up to the total`)
        if (groupBy) {
          for (const g of r.body.groups) {
            t.equal(g.cost, formatMicros(sum(records.filter(x => (groupBy === 'model' ? x.model : x.organization) === g.key))), `${groupBy} ${g.key}`)
          }
        }
      }
    }
  })

  t.test('per tag of the key: a record in each of its key\'s tags, the total every record once', async t => {
    const ledger = await makeLedger(t)
    const { admin } = await running(t, ledger)
    await ledger.createOrganization('acme')
    const key = (id: string, tags?: string[]) => ledger.createKey({ id, hash: id.padEnd(64, 'a'), prefix: 'sk-gw-tags', organization: 'acme', ...(tags ? { tags } : {}) })
    await key('k-both', ['team-a', 'prod'])
    await key('k-a', ['team-a'])
    await key('k-none')
    await Promise.all([
      ledger.charge(undefined, record({ traceId: 't1', time: T0 + 1, keyId: 'k-both', cost: 100 })),
      ledger.charge(undefined, record({ traceId: 't2', time: T0 + 2, keyId: 'k-a', cost: 20 })),
      ledger.charge(undefined, record({ traceId: 't3', time: T0 + 3, keyId: 'k-none', cost: 3 })),
      ledger.charge(undefined, record({ traceId: 't4', time: T0 + 4, keyId: 'config-key', cost: 4000 })),
    ])
    const r = await call(admin, 'GET', `/admin/usage/summary?from=${iso(T0)}&to=${iso(T0 + MIN)}&bucket=minute&groupBy=tag`)
    t.equal(r.status, 200, r.text)
    t.strictSame(r.body.groups.map((g: { key: string | null, requests: number, cost: string }) => [g.key, g.requests, g.cost]),
      [[null, 2, '0.004003'], ['team-a', 2, '0.000120'], ['prod', 1, '0.000100']], 'largest cost first; untagged and config keys are null')
    t.match(r.body.total, { requests: 4, cost: '0.004123' }, 'the total counts each record once')
    t.equal(r.body.groupBy, 'tag')
    const filtered = await call(admin, 'GET', `/admin/usage/summary?from=${iso(T0)}&to=${iso(T0 + MIN)}&bucket=minute&groupBy=tag&key=k-both`)
    t.strictSame(filtered.body.groups.map((g: { key: string | null }) => g.key).sort(), ['prod', 'team-a'])
  })

  t.test('bad input: 400 with the path of the bad field, never a 500', async t => {
    const ledger = await makeLedger(t)
    const { admin } = await running(t, ledger)
    const cases: Array<[string, string]> = [
      ['', '/querystring/from'],
      ['from=yesterday', '/querystring/from'],
      [`from=${iso(T0)}&bucket=second`, '/querystring/bucket'],
      [`from=${iso(T0)}&to=${iso(T0 + 2 * 86_400_000)}&bucket=minute`, '/querystring/bucket'],
      [`from=${iso(T0)}&to=${iso(T0 - 1)}`, '/querystring/from'],
      [`from=${iso(T0)}&groupBy=provider`, '/querystring/groupBy'],
      [`from=${iso(T0)}&top=0`, '/querystring/top'],
      [`from=${iso(T0)}&limit=5`, '/querystring/limit'],
      [`from=${iso(T0)}&to=2025-13-45T99:00:00Z`, '/querystring/to'],
    ]
    for (const [q, path] of cases) {
      const r = await call(admin, 'GET', `/admin/usage/summary?${q}`)
      t.equal(r.status, 400, `${q}: 400`)
      t.equal(r.body?.error?.metadata?.path, path, `${q}: ${path}`)
    }
    const r = await call(admin, 'GET', `/admin/usage/summary?from=${iso(T0)}`, undefined, {})
    t.equal(r.status, 401, 'the admin key is needed')
  })
}

t.test('SQLite ledger', async t => {
  await suite(t, async sub => {
    const l = await openLedger({ backend: 'sqlite', path: ':memory:' })
    await l.migrate()
    sub.teardown(() => l.close())
    return l
  })
})

t.test('PostgreSQL ledger', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  await suite(t, pgLedgers(t, url, 'admin_summary'))
})
