/**
 * @module test/admin/journal-api – the balance journal and the audit log through the admin API of
 * a listening gateway, on SQLite and PostgreSQL: top-ups, adjustments and refunds leave journal
 * rows with the admin key's id as actor; their bad inputs get 400/404/409 and change nothing; the
 * history pages newest first; GET /admin/verify lists an organization whose balance was changed
 * behind the journal's back; every admin write route leaves an audit row (refusals and schema
 * failures included, nothing for a request without an admin key), also as one JSON log line, never
 * with a key's secret or hash; GET /admin/audit filters and pages.
 */
import t, { type Test } from 'tap'
import pino from 'pino'
import { startAdmin } from '../../admin/app.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import type { AuditEntry } from '../../core/ledger/audit.ts'
import { Circuits } from '../../core/dispatch/circuits.ts'
import { hashKey } from '../../core/ledger/keys.ts'
import { buildTestApp } from '../helpers/build-test-app.ts'
import { ADMIN_KEY, adminAuth, adminCall, type AdminRes } from '../helpers/admin.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import { usage } from '../ledger/contract.ts'

const SECOND_KEY = 'adm-second-0123456789abcdef'

/** A JSON log line: the message, and the audit entry on the audit log's lines. */
interface LogLine { msg?: string, audit?: { id: number }, [field: string]: unknown }

interface Admin { admin: string, ledger: Ledger, app: Awaited<ReturnType<typeof buildTestApp>>, logs: LogLine[], call: (method: string, path: string, body?: unknown, key?: string) => Promise<AdminRes> }

/** A listening gateway and admin listener over `ledger`, with two admin keys (ops, ci), its log lines kept. */
async function start (t: Test, ledger: Ledger): Promise<Admin> {
  const logs: LogLine[] = []
  const app = await buildTestApp({
    ledger,
    doc: { admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }, { id: 'ci', key: '${SECOND_KEY}' }] } },
    env: { ADMIN_KEY, SECOND_KEY },
    logger: pino({ level: 'info' }, { write (s: string) { logs.push(JSON.parse(s)) } }),
  })
  const admin = (await startAdmin(app))!.address
  t.teardown(() => app.close())
  return { admin, ledger, app, logs, call: (method, path, body, key = ADMIN_KEY) => adminCall(admin, method, path, body, adminAuth(key)) }
}

async function suite (t: Test, makeLedger: (t: Test) => Promise<Ledger>, backend: 'sqlite' | 'postgres'): Promise<void> {
  t.test('a top-up, an adjustment and a refund leave journal rows with the admin key\'s id; the history pages newest first', async t => {
    const { call, ledger } = await start(t, await makeLedger(t))
    await call('POST', '/admin/organizations', { id: 'acme' })
    let r = await call('POST', '/admin/organizations/acme/topup', { amount: '2.50' })
    t.equal(r.status, 200)
    t.match(r.body, { organization: 'acme', balance: '2.500000', entry: { kind: 'topup', amount: '2.500000', balance: '2.500000', actor: 'admin:ops', reason: null } })
    r = await call('POST', '/admin/organizations/acme/topup', { amount: '1', reason: 'invoice 42' }, SECOND_KEY)
    t.match(r.body.entry, { actor: 'admin:ci', reason: 'invoice 42', balance: '3.500000' })
    r = await call('POST', '/admin/organizations/acme/adjustments', { amount: '-0.75', reason: 'double top-up' })
    t.match(r.body, { balance: '2.750000', entry: { kind: 'adjustment', amount: '-0.750000', actor: 'admin:ops', reason: 'double top-up' } })
    await ledger.charge(undefined, usage({ organization: 'acme', traceId: 'call-9', cost: 400_000 }))
    r = await call('POST', '/admin/organizations/acme/refunds', { amount: '0.4', reason: 'bad answer', traceId: 'call-9' })
    t.match(r.body, { balance: '2.750000', entry: { kind: 'refund', amount: '0.400000', traceId: 'call-9' } })

    r = await call('GET', '/admin/organizations/acme/journal?limit=3')
    t.strictSame(r.body.data.map((e: { kind: string }) => e.kind), ['refund', 'adjustment', 'topup'])
    t.type(r.body.nextCursor, 'string')
    const rest = await call('GET', `/admin/organizations/acme/journal?limit=3&cursor=${r.body.nextCursor}`)
    t.strictSame(rest.body.data.map((e: { amount: string }) => e.amount), ['2.500000'])
    t.equal(rest.body.nextCursor, null)
    t.match(rest.body.data[0], { id: Number, organization: 'acme', actor: 'admin:ops', time: /^\d{4}-\d\d-\d\dT/ })
    t.equal((await call('GET', '/admin/organizations/nope/journal')).status, 404)
    t.match((await call('GET', '/admin/organizations/acme/journal?cursor=abc')).body.error.metadata, { path: '/querystring/cursor' })
    t.match((await call('GET', '/admin/verify')).body, { ok: true, organizations: 1, differences: [] })
  })

  t.test('bad adjustments and refunds: the status, the field, and nothing changed', async t => {
    const { call, ledger } = await start(t, await makeLedger(t))
    await call('POST', '/admin/organizations', { id: 'acme' })
    await call('POST', '/admin/organizations/acme/topup', { amount: '10' })
    await ledger.charge(undefined, usage({ organization: 'acme', traceId: 'call-1', cost: 1_000_000 }))
    const cases: Array<[string, string, unknown, number, string | undefined]> = [
      ['adjust without a reason', 'adjustments', { amount: '-1' }, 400, '/body/reason'],
      ['adjust with a blank reason', 'adjustments', { amount: '-1', reason: '   ' }, 400, '/body/reason'],
      ['adjust by 0', 'adjustments', { amount: '0', reason: 'r' }, 400, '/body/amount'],
      ['adjust by 7 decimals', 'adjustments', { amount: '-0.0000001', reason: 'r' }, 400, '/body/amount'],
      ['adjust past the exact range', 'adjustments', { amount: '-9007199254.740992', reason: 'r' }, 400, '/body/amount'],
      ['refund a negative amount', 'refunds', { amount: '-1', reason: 'r' }, 400, '/body/amount'],
      ['refund 0', 'refunds', { amount: '0', reason: 'r' }, 400, '/body/amount'],
      ['refund an unknown call', 'refunds', { amount: '1', reason: 'r', traceId: 'nope' }, 404, '/body/traceId'],
      ['refund more than the call cost', 'refunds', { amount: '1.000001', reason: 'r', traceId: 'call-1' }, 409, '/body/amount'],
      ['an extra field', 'refunds', { amount: '1', reason: 'r', by: 'me' }, 400, '/body/by'],
    ]
    for (const [name, route, body, status, path] of cases) {
      const r = await call('POST', `/admin/organizations/acme/${route}`, body)
      t.equal(r.status, status, `${name}: ${status}`)
      t.equal(r.body?.error?.metadata?.path, path, `${name}: ${path}`)
    }
    t.equal((await call('POST', '/admin/organizations/nope/adjustments', { amount: '1', reason: 'r' })).status, 404, 'an unknown organization')
    t.match((await call('POST', '/admin/organizations/acme/refunds', { amount: '1', reason: 'r', traceId: 'call-1' })).body, { balance: '0.000000' }, 'the whole charge, once')
    t.match((await call('POST', '/admin/organizations/acme/refunds', { amount: '0.000001', reason: 'r', traceId: 'call-1' })).body.error, { code: 409 }, 'not twice')
    t.equal((await ledger.listJournal({ organization: 'acme', limit: 100 })).length, 2, 'only the top-up and the refund that fitted')
    t.match((await call('GET', '/admin/verify')).body, { ok: true })
  })

  t.test('verify lists an organization whose balance changed behind the journal\'s back, with the three numbers', async t => {
    const { call, ledger } = await start(t, await makeLedger(t))
    for (const id of ['a', 'b']) await call('POST', '/admin/organizations', { id })
    await call('POST', '/admin/organizations/b/topup', { amount: '5' })
    await ledger.charge(undefined, usage({ organization: 'b', traceId: 'c', cost: 1_500_000 }))
    const l = ledger as unknown as { db?: { exec (s: string): void }, pool?: { query (s: string): Promise<unknown> } }
    const tamper = "UPDATE organizations SET balance = balance + 250000 WHERE id = 'b'"
    if (l.db) l.db.exec(tamper)
    else await l.pool!.query(tamper)
    const r = await call('GET', '/admin/verify')
    t.strictSame(r.body, { ok: false, organizations: 2, differences: [{ organization: 'b', balance: '3.750000', journal: '5.000000', charges: '1.500000', difference: '0.250000' }] })
  })

  t.test('every admin write leaves an audit row and a log line; refusals too; never a secret', async t => {
    const { call, ledger, app, logs, admin } = await start(t, await makeLedger(t))
    const since = new Date().toISOString()
    await call('POST', '/admin/organizations', { id: 'acme', name: 'Acme' })
    await call('POST', '/admin/projects', { id: 'web', organization: 'acme' })
    const key = await call('POST', '/admin/keys', { organization: 'acme', project: 'web' })
    const keyId = key.body.id as string
    await call('POST', `/admin/keys/${keyId}/revoke`)
    await call('PUT', '/admin/prices', { model: 'echo/echo-1', input: 3, output: 15 })
    await call('PUT', '/admin/prices', { model: 'echo/echo-1', input: 0, output: 0 })
    await call('POST', '/admin/organizations/acme/topup', { amount: '1' })
    await call('POST', '/admin/organizations/acme/adjustments', { amount: '-0.5', reason: 'r' })
    await call('POST', '/admin/organizations/acme/refunds', { amount: '0.25', reason: 'r' })
    const gw = app.gateway
    const d = gw.catalog.all()[0]!.deployments[0]!
    for (let i = 0; i < gw.circuits.options(d).failureThreshold; i++) gw.circuits.failure(d)
    await call('POST', '/admin/circuits/reset', { key: Circuits.key(d) })
    let holdId = 'h-none'
    if (backend === 'postgres') holdId = (await ledger.reserve('acme', 10))!.id
    await call('DELETE', `/admin/reservations/${holdId}`)
    // Refusals: the ledger's, the service's, and the schema's.
    await call('POST', `/admin/keys/${keyId}/revoke`)
    if (backend === 'postgres') await call('DELETE', `/admin/reservations/${holdId}`)
    await call('POST', '/admin/organizations', { id: 'acme' }, SECOND_KEY)
    await call('PUT', '/admin/prices', { model: 'm', input: -1, output: 0 })
    await call('POST', '/admin/organizations/nope/topup', { amount: '1' })
    await call('POST', '/admin/organizations/acme/topup', '{not json')
    // Without an admin key: refused before anyone is known, not audited.
    t.equal((await adminCall(admin, 'POST', '/admin/organizations', { id: 'x' }, {})).status, 401)
    t.equal((await adminCall(admin, 'POST', '/admin/organizations', { id: 'x' }, adminAuth('adm-wrong-0123456789abcdef'))).status, 401)

    const { body } = await call('GET', '/admin/audit?limit=100')
    const rows = [...body.data].reverse() as AuditEntry[]
    t.strictSame(rows.map(e => [e.action, e.target, e.result, e.status]), [
      ['organization.create', 'acme', 'ok', null],
      ['project.create', 'web', 'ok', null],
      ['key.create', keyId, 'ok', null],
      ['key.revoke', keyId, 'ok', null],
      ['price.set', 'echo/echo-1', 'ok', null],
      ['price.set', 'echo/echo-1', 'ok', null],
      ['balance.topup', 'acme', 'ok', null],
      ['balance.adjust', 'acme', 'ok', null],
      ['balance.refund', 'acme', 'ok', null],
      ['circuit.reset', Circuits.key(d), 'ok', null],
      backend === 'postgres' ? ['hold.release', holdId, 'ok', null] : ['hold.release', holdId, 'GW_ERR_HOLDS_NOT_STORED', 409],
      ['key.revoke', keyId, 'GW_ERR_KEY_ALREADY_REVOKED', 409],
      ...(backend === 'postgres' ? [['hold.release', holdId, 'GW_ERR_HOLD_UNKNOWN', 404]] : []),
      ['organization.create', 'acme', 'GW_ERR_ORGANIZATION_EXISTS', 409],
      ['price.set', 'm', 'GW_ERR_BAD_REQUEST', 400],
      ['balance.topup', 'nope', 'GW_ERR_ORGANIZATION_UNKNOWN', 404],
      ['balance.topup', 'acme', 'GW_ERR_INVALID_JSON', 400],
    ])
    t.ok(rows.every(e => e.actor === (e.result === 'GW_ERR_ORGANIZATION_EXISTS' ? 'admin:ci' : 'admin:ops')), 'each by its admin key')
    t.match(rows[0], { before: null, after: { id: 'acme', name: 'Acme', balance: 0 } })
    t.match(rows[3], { before: { id: keyId, revokedAt: undefined }, after: { id: keyId, prefix: key.body.prefix, revokedAt: Number } })
    t.match(rows[5], { before: { input: 3, output: 15 }, after: { input: 0, output: 0 } }, 'a price set to 0 leaves an audit entry')
    t.match(rows[7], { before: { balance: 1_000_000 }, after: { balance: 500_000, entry: { kind: 'adjustment', amount: -500_000, actor: 'admin:ops', reason: 'r' } } })
    t.match(rows[9], { before: { state: 'open' }, after: { state: 'closed', failures: 0 } })
    if (backend === 'postgres') t.match(rows[10], { before: { id: holdId, organization: 'acme', amount: 10 }, after: null })
    const everything = JSON.stringify(body) + JSON.stringify(logs)
    t.notOk(everything.includes(key.body.secret), 'the key\'s secret is nowhere in the audit log or the logs')
    t.notOk(everything.includes(hashKey(key.body.secret)), 'nor its hash')
    t.notOk(everything.includes(ADMIN_KEY) || everything.includes(SECOND_KEY), 'nor an admin key')
    const lines = logs.filter(l => l.msg === 'admin audit')
    t.equal(lines.length, rows.length, 'one log line per entry')
    t.ok(lines.every(l => l.level === 30 && l.listener === 'admin'), 'info, on the admin listener\'s logger')
    t.strictSame(lines.map(l => l.audit!.id).sort((a, b) => a - b), rows.map(e => e.id), 'the same entries')

    // Filters and pages.
    const targets = async (q: string): Promise<string[]> => (await call('GET', `/admin/audit?${q}`)).body.data.map((e: { action: string }) => e.action)
    t.strictSame(await targets('actor=admin:ci'), ['organization.create'])
    t.strictSame(await targets('action=balance.topup'), ['balance.topup', 'balance.topup', 'balance.topup'])
    t.strictSame(await targets(`target=${keyId}`), ['key.revoke', 'key.revoke', 'key.create'])
    t.equal((await targets(`from=${since}`)).length, rows.length)
    t.strictSame(await targets('to=2000-01-01'), [])
    const p1 = await call('GET', '/admin/audit?limit=4')
    const p2 = await call('GET', `/admin/audit?limit=4&cursor=${p1.body.nextCursor}`)
    t.strictSame([...p1.body.data, ...p2.body.data].map((e: { id: number }) => e.id), [...rows].reverse().slice(0, 8).map(e => e.id))
    t.match((await call('GET', '/admin/audit?from=2025-02-01&to=2025-01-01')).body.error.metadata, { path: '/querystring/from' })
    t.match((await call('GET', '/admin/audit?limit=0')).body.error.metadata, { path: '/querystring/limit' })
  })
}

// Asked first: a probe made while the SQLite suite keeps the event loop busy can time out.
const url = await databaseUrl(t)

t.test('SQLite ledger', async t => {
  await suite(t, async sub => {
    const l = await openLedger({ backend: 'sqlite', path: ':memory:' })
    await l.migrate()
    sub.teardown(() => l.close())
    return l
  }, 'sqlite')
})

if (url !== undefined) t.test('PostgreSQL ledger', async t => { await suite(t, pgLedgers(t, url, 'journal_api'), 'postgres') })
