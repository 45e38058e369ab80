/** @module test/admin/admin-api – the admin HTTP API through a listening gateway and its admin listener, on SQLite and PostgreSQL ledgers. */
import t, { type Test } from 'tap'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { startAdmin } from '../../admin/app.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { Circuits } from '../../core/dispatch/circuits.ts'
import { generateKey, hashKey, keyDisplayPrefix } from '../../core/ledger/keys.ts'
import { auth, buildTestApp, TEST_KEY } from '../helpers/build-test-app.ts'
import { ADMIN_KEY, adminAuth, REVOKED_ADMIN_KEY, running } from '../helpers/admin.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

interface Res { status: number, body: any, text: string, headers: Headers }
async function call (base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = adminAuth()): Promise<Res> {
  const r = await fetch(base + path, {
    method,
    headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  })
  const text = await r.text()
  let parsed: unknown
  try { parsed = JSON.parse(text) } catch { parsed = undefined }
  return { status: r.status, body: parsed, text, headers: r.headers }
}

function record (over: Partial<UsageRecord> & { traceId: string, time: number }): UsageRecord {
  return {
    keyId: 'k1', organization: 'acme', project: 'web', model: 'echo/echo-1', provider: 'echo',
    inputTokens: 10, cachedInputTokens: 0, outputTokens: 5, cost: 1500, price: { input: 100, output: 100 }, estimated: false, ...over,
  }
}

async function suite (t: Test, makeLedger: (t: Test) => Promise<Ledger>, backend: 'sqlite' | 'postgres'): Promise<void> {
  t.test('authorization: 401 without a key, with a wrong key or with a client key (told apart by nothing), 403 for a revoked admin key', async t => {
    const ledger = await makeLedger(t)
    const { admin, gateway } = await running(t, ledger)
    await ledger.createOrganization('acme')
    const secret = generateKey()
    await ledger.createKey({ id: 'ledger-client', hash: hashKey(secret), prefix: keyDisplayPrefix(secret), organization: 'acme' })
    for (const [name, headers, status] of [
      ['no key', {}, 401], ['wrong key', adminAuth('adm-not-a-key-at-all'), 401], ['not bearer', { authorization: `Basic ${ADMIN_KEY}` }, 401],
      ['config client key', auth(TEST_KEY), 401], ['ledger client key', adminAuth(secret), 401], ['revoked admin key', adminAuth(REVOKED_ADMIN_KEY), 403],
    ] as const) {
      const r = await call(admin, 'GET', '/admin/organizations', undefined, headers as Record<string, string>)
      t.equal(r.status, status, name)
      t.equal(r.body?.error?.code, status, `${name}: the gateway's error body`)
      t.type(r.body?.error?.message, 'string')
      t.ok(r.headers.get('x-gw-trace-id'), `${name}: trace id header`)
      if (name.includes('client key')) t.equal(r.body?.error?.message, 'Invalid admin key.', `${name}: the same answer as a wrong key`)
    }
    t.equal((await call(admin, 'POST', '/admin/organizations', { id: 'x' }, {})).status, 401, 'writes too')
    t.equal((await call(admin, 'GET', '/admin/organizations')).status, 200, 'the admin key works')
    // Admin keys never work on the gateway's own routes, and the gateway does not serve /admin.
    const chat = await fetch(`${gateway}/v1/models`, { headers: adminAuth() })
    t.equal(chat.status, 401, 'an admin key is no client key')
    t.equal((await call(gateway, 'GET', '/admin/organizations', undefined, adminAuth())).status, 404, 'no admin API on the gateway listener')
    t.equal((await call(admin, 'GET', '/admin/nothing-here')).status, 404, 'unknown admin route: 404 with a key')
    t.equal((await call(admin, 'GET', '/admin/nothing-here', undefined, {})).status, 401, 'and 401 without')
  })

  t.test('organizations, projects, balances: create, list, show, top up', async t => {
    const ledger = await makeLedger(t)
    const { admin } = await running(t, ledger)
    let r = await call(admin, 'POST', '/admin/organizations', { id: 'acme', name: 'Acme Inc' })
    t.equal(r.status, 201)
    t.match(r.body, { id: 'acme', name: 'Acme Inc', balance: '0.000000', reserved: '0.000000', available: '0.000000' })
    t.equal((await call(admin, 'POST', '/admin/organizations', { id: 'acme' })).status, 409, 'duplicate: 409')
    t.equal((await call(admin, 'POST', '/admin/organizations', { id: 'beta' })).status, 201)
    r = await call(admin, 'GET', '/admin/organizations')
    t.same(r.body.data.map((o: { id: string }) => o.id), ['acme', 'beta'])
    t.equal((await call(admin, 'GET', '/admin/organizations/nope')).status, 404)

    r = await call(admin, 'POST', '/admin/organizations/acme/topup', { amount: '12.50' })
    t.match(r.body, { organization: 'acme', balance: '12.500000', entry: { kind: 'topup', actor: 'admin:ops' } })
    r = await call(admin, 'GET', '/admin/organizations/acme/balance')
    t.same(r.body, { organization: 'acme', balance: '12.500000', reserved: '0.000000', available: '12.500000' })
    t.equal((await call(admin, 'GET', '/admin/organizations/acme')).body.balance, '12.500000')
    t.equal((await call(admin, 'POST', '/admin/organizations/nope/topup', { amount: '1' })).status, 404)
    t.equal((await ledger.getBalance('acme'))!.balance, 12_500_000, 'in the ledger')

    r = await call(admin, 'POST', '/admin/projects', { id: 'web', organization: 'acme', name: 'Web' })
    t.equal(r.status, 201)
    t.match(r.body, { id: 'web', organization: 'acme', name: 'Web' })
    t.equal((await call(admin, 'POST', '/admin/projects', { id: 'web', organization: 'acme' })).status, 409)
    r = await call(admin, 'POST', '/admin/projects', { id: 'p2', organization: 'nope' })
    t.equal(r.status, 404)
    t.equal(r.body.error.metadata.path, '/body/organization')
    await call(admin, 'POST', '/admin/projects', { id: 'b1', organization: 'beta' })
    t.same((await call(admin, 'GET', '/admin/projects')).body.data.map((p: { id: string }) => p.id), ['web', 'b1'])
    t.same((await call(admin, 'GET', '/admin/projects?organization=beta')).body.data.map((p: { id: string }) => p.id), ['b1'])
  })

  t.test('bad input: 400 with the path of the bad field, never a 500', async t => {
    const ledger = await makeLedger(t)
    const { admin } = await running(t, ledger)
    await ledger.createOrganization('acme')
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/admin/organizations', {}, '/body/id'],
      ['POST', '/admin/organizations', { id: 'has space' }, '/body/id'],
      ['POST', '/admin/organizations', { id: 'ok', extra: 1 }, '/body/extra'],
      ['POST', '/admin/organizations/acme/topup', { amount: '-5' }, '/body/amount'],
      ['POST', '/admin/organizations/acme/topup', { amount: '1.1234567' }, '/body/amount'],
      ['POST', '/admin/organizations/acme/topup', { amount: '0' }, '/body/amount'],
      ['POST', '/admin/organizations/acme/topup', {}, '/body/amount'],
      ['POST', '/admin/keys', { organization: 'acme', models: [] }, '/body/models'],
      ['POST', '/admin/keys', { organization: 'acme', models: 'echo/echo-1' }, '/body/models'],
      ['PUT', '/admin/prices', { model: 'm', input: -1, output: 1 }, '/body/input'],
      ['PUT', '/admin/prices', { model: 'm', input: 1 }, '/body/output'],
      ['PUT', '/admin/prices', { model: 'm', input: 1.0000001, output: 1 }, '/body/input'],
      ['GET', '/admin/usage?limit=0', undefined, '/querystring/limit'],
      ['GET', '/admin/usage?limit=abc', undefined, '/querystring/limit'],
      ['GET', '/admin/usage?from=yesterday', undefined, '/querystring/from'],
      ['GET', '/admin/usage?from=2025-13-45', undefined, '/querystring/from'],
      ['GET', '/admin/usage?cursor=bm90LWEtY3Vyc29y', undefined, '/querystring/cursor'],
      ['GET', '/admin/usage?bogus=1', undefined, '/querystring/bogus'],
      ['GET', '/admin/usage/export?format=xml', undefined, '/querystring/format'],
      ['POST', '/admin/circuits/reset', {}, '/body/key'],
    ]
    for (const [method, path, body, field] of cases) {
      const r = await call(admin, method, path, body)
      t.equal(r.status, 400, `${method} ${path} ${JSON.stringify(body)}`)
      t.equal(r.body?.error?.code, 400)
      t.equal(r.body?.error?.metadata?.path, field, `path ${field}`)
    }
    const bad = await call(admin, 'POST', '/admin/organizations', '{"id": ')
    t.equal(bad.status, 400, 'broken JSON')
    t.equal(bad.body.error.code, 400)
  })

  t.test('keys: create shows the secret once, list never shows secrets, revoke; the gateway honours them', async t => {
    const ledger = await makeLedger(t)
    const { admin, gateway } = await running(t, ledger)
    await ledger.createOrganization('acme')
    await ledger.createProject('web', 'acme')
    let r = await call(admin, 'POST', '/admin/keys', { organization: 'acme', project: 'web', name: 'ci', models: ['echo/echo-1'], id: 'ci-key' })
    t.equal(r.status, 201)
    t.equal(r.headers.get('cache-control'), 'no-store')
    const secret = r.body.secret as string
    t.match(secret, /^sk-gw-/)
    t.match(r.body, { id: 'ci-key', organization: 'acme', project: 'web', name: 'ci', models: ['echo/echo-1'], revokedAt: null })
    t.equal((await ledger.findKeyByHash(hashKey(secret)))?.id, 'ci-key', 'only the hash is stored, and it matches')
    t.equal((await call(admin, 'POST', '/admin/keys', { organization: 'acme', id: 'ci-key' })).status, 409)
    t.equal((await call(admin, 'POST', '/admin/keys', { organization: 'nope' })).status, 404)
    t.equal((await call(admin, 'POST', '/admin/keys', { organization: 'acme', project: 'nope' })).body.error.metadata.path, '/body/project')
    r = await call(admin, 'GET', '/admin/keys')
    t.equal(r.body.data.length, 1)
    t.notOk(r.text.includes(secret), 'no secret in the listing')
    t.notOk(r.text.includes(hashKey(secret)), 'no hash either')
    t.notOk('secret' in r.body.data[0])
    t.equal((await fetch(`${gateway}/v1/models`, { headers: auth(secret) })).status, 200, 'the new key works on the gateway')
    r = await call(admin, 'POST', '/admin/keys/ci-key/revoke')
    t.equal(r.status, 200)
    t.type(r.body.revokedAt, 'string')
    t.equal((await call(admin, 'POST', '/admin/keys/ci-key/revoke')).status, 409, 'already revoked')
    t.equal((await call(admin, 'POST', '/admin/keys/nope/revoke')).status, 404)
  })

  t.test('prices: the catalog\'s with the ledger\'s over them; set writes the ledger', async t => {
    const ledger = await makeLedger(t)
    const { admin } = await running(t, ledger)
    let r = await call(admin, 'GET', '/admin/prices')
    t.equal(r.status, 200)
    const echo = r.body.data.find((p: { model: string }) => p.model === 'echo/echo-1')
    t.ok(echo, 'catalog models are listed')
    t.equal(echo.inCatalog, true)
    t.not(echo.source, 'ledger')
    r = await call(admin, 'PUT', '/admin/prices', { model: 'echo/echo-1', input: 3, output: 15, cachedInput: 0.3 })
    t.equal(r.status, 200)
    t.match(r.body, { model: 'echo/echo-1', source: 'ledger', price: { input: 3, output: 15, cachedInput: 0.3 } })
    t.same(await ledger.getPrice('echo/echo-1'), { input: 3, cachedInput: 0.3, output: 15 })
    await call(admin, 'PUT', '/admin/prices', { model: 'other/m', input: 1, output: 2 })
    r = await call(admin, 'GET', '/admin/prices')
    t.match(r.body.data.find((p: { model: string }) => p.model === 'echo/echo-1'), { source: 'ledger', price: { input: 3, output: 15 }, ledgerPrice: { input: 3 } })
    t.match(r.body.data.find((p: { model: string }) => p.model === 'other/m'), { inCatalog: false, source: 'ledger', price: { input: 1, output: 2 } })
  })

  t.test('usage: filters, cursor pages, CSV and JSON export', async t => {
    const ledger = await makeLedger(t)
    const { admin } = await running(t, ledger)
    await ledger.createOrganization('acme')
    await ledger.createOrganization('beta')
    const t0 = Date.parse('2025-03-01T00:00:00Z')
    const N = 25
    await Promise.all(Array.from({ length: N }, (_, i) => ledger.charge(undefined, record({
      traceId: `tr-${i}`, time: t0 + Math.floor(i / 2) * 1000, // pairs share a time: the cursor breaks ties by id
      organization: i % 5 === 0 ? 'beta' : 'acme', project: i % 5 === 0 ? 'p-b' : 'web', keyId: i % 2 ? 'k1' : 'k2', model: i % 3 ? 'echo/echo-1' : '=cmd', idempotencyKey: i === 1 ? '=HYPERLINK("x")' : undefined,
    }))))
    // Every page, by cursor, gives every record once.
    const seen: string[] = []
    let cursor: string | null = null
    for (let pages = 0; pages < 10; pages++) {
      const r: Res = await call(admin, 'GET', `/admin/usage?limit=7${cursor ? `&cursor=${cursor}` : ''}`)
      t.equal(r.status, 200)
      seen.push(...r.body.data.map((u: { traceId: string }) => u.traceId))
      cursor = r.body.nextCursor
      if (!cursor) break
    }
    t.equal(seen.length, N, 'all records')
    t.equal(new Set(seen).size, N, 'none twice')
    const times = (await call(admin, 'GET', '/admin/usage?limit=1000')).body.data.map((u: { time: string }) => u.time)
    t.same(times, [...times].sort(), 'time order')

    let r = await call(admin, 'GET', '/admin/usage?organization=beta&limit=1000')
    t.same(r.body.data.map((u: { traceId: string }) => u.traceId).sort(), ['tr-0', 'tr-10', 'tr-15', 'tr-20', 'tr-5'])
    t.equal(r.body.nextCursor, null)
    r = await call(admin, 'GET', '/admin/usage?key=k1&model=echo/echo-1&project=web&limit=1000')
    t.ok(r.body.data.length > 0)
    t.ok(r.body.data.every((u: { keyId: string, model: string, project: string }) => u.keyId === 'k1' && u.model === 'echo/echo-1' && u.project === 'web'))
    r = await call(admin, 'GET', `/admin/usage?from=${new Date(t0 + 2000).toISOString()}&to=${new Date(t0 + 4000).toISOString()}`)
    t.same(r.body.data.map((u: { traceId: string }) => u.traceId), ['tr-4', 'tr-5', 'tr-6', 'tr-7'], 'from <= time < to')
    t.match(r.body.data[0], { cost: '0.001500', inputTokens: 10, price: { input: 100, output: 100 }, estimated: false })

    const csv = await fetch(`${admin}/admin/usage/export?format=csv&organization=acme`, { headers: adminAuth() })
    t.equal(csv.status, 200)
    t.match(csv.headers.get('content-type'), /^text\/csv/)
    const lines = (await csv.text()).split('\r\n').filter(Boolean)
    t.equal(lines[0]!.split(',')[0], 'time')
    t.equal(lines.length, 1 + 20, 'header + the acme records')
    t.ok(lines.some(l => l.includes('"\'=HYPERLINK(""x"")"')), 'formula text neutralised and quoted')
    const json = await fetch(`${admin}/admin/usage/export?format=json`, { headers: adminAuth() })
    t.match(json.headers.get('content-type'), /^application\/json/)
    const arr = JSON.parse(await json.text())
    t.equal(arr.length, N)
    const empty = await fetch(`${admin}/admin/usage/export?format=json&organization=none`, { headers: adminAuth() })
    t.same(JSON.parse(await empty.text()), [])
  })

  t.test('top-ups in flight at once: the exact final balance', async t => {
    const ledger = await makeLedger(t)
    const { admin } = await running(t, ledger)
    await ledger.createOrganization('acme')
    const N = 60
    const results = await Promise.all(Array.from({ length: N }, (_, i) => call(admin, 'POST', '/admin/organizations/acme/topup', { amount: i % 2 ? '1.000001' : '0.25' })))
    t.ok(results.every(r => r.status === 200), 'all answered 200')
    const expected = (N / 2) * 1_000_001 + (N / 2) * 250_000
    t.equal((await ledger.getBalance('acme'))!.balance, expected)
    const balances = results.map(r => Math.round(Number(r.body.balance) * 1e6)).sort((a, b) => a - b)
    t.equal(new Set(balances).size, N, 'every top-up saw a distinct balance')
    t.equal(balances.at(-1), expected, 'the last one saw the total')
  })

  t.test('top-ups stay exact integers of micro-units: an amount or a balance past 2^53 − 1 is refused with 400, even with many in flight', async t => {
    const ledger = await makeLedger(t)
    const { admin } = await running(t, ledger)
    await ledger.createOrganization('acme')
    let r = await call(admin, 'POST', '/admin/organizations/acme/topup', { amount: '9007199254.740992' })
    t.equal(r.status, 400, '2^53 micro-units would round')
    t.equal(r.body.error.metadata?.path, '/body/amount')
    r = await call(admin, 'POST', '/admin/organizations/acme/topup', { amount: '999999999999.999999' })
    t.equal(r.status, 400, 'the largest amount the pattern allows')
    t.equal((await ledger.getBalance('acme'))!.balance, 0, 'nothing was added')
    r = await call(admin, 'POST', '/admin/organizations/acme/topup', { amount: '9007199254.740981' })
    t.equal(r.status, 200)
    // 10 micro-units of room left; 30 top-ups of one micro-unit at once: exactly 10 fit.
    const results = await Promise.all(Array.from({ length: 30 }, () => call(admin, 'POST', '/admin/organizations/acme/topup', { amount: '0.000001' })))
    t.equal(results.filter(x => x.status === 200).length, 10, 'exactly the room left was added')
    const refused = results.filter(x => x.status === 400)
    t.equal(refused.length, 20, 'the rest are refused with 400, none with 500')
    t.match(refused[0].body.error.message, /largest exact amount/)
    t.equal((await ledger.getBalance('acme'))!.balance, Number.MAX_SAFE_INTEGER, 'the balance is exactly 2^53 − 1 micro-units')
    r = await call(admin, 'GET', '/admin/organizations/acme/balance')
    t.equal(r.body.balance, '9007199254.740991', 'shown to the last micro-unit')
  })

  t.test('reservations: list and release', async t => {
    const ledger = await makeLedger(t)
    const { admin } = await running(t, ledger)
    await ledger.createOrganization('acme')
    await ledger.topUp('acme', 10_000_000)
    if (backend === 'sqlite') {
      t.same((await call(admin, 'GET', '/admin/reservations')).body, { stored: false, data: [] }, 'SQLite: holds are not stored')
      const r = await call(admin, 'DELETE', '/admin/reservations/x')
      t.equal(r.status, 409)
      t.match(r.body.error.message, /PostgreSQL/)
      return
    }
    const h1 = await ledger.reserve('acme', 2_000_000, { traceId: 'trace-1' })
    const h2 = await ledger.reserve('acme', 1_000_000)
    t.ok(h1 && h2)
    let r = await call(admin, 'GET', '/admin/reservations?organization=acme')
    t.equal(r.body.stored, true)
    t.same(r.body.data.map((h: { id: string }) => h.id).sort(), [h1!.id, h2!.id].sort())
    t.match(r.body.data.find((h: { id: string }) => h.id === h1!.id), { amount: '2.000000', state: 'live', traceId: 'trace-1', kind: 'organization', keyId: null })
    t.same((await call(admin, 'GET', '/admin/reservations?organization=other')).body.data, [])
    t.equal((await call(admin, 'GET', '/admin/organizations/acme/balance')).body.reserved, '3.000000')
    r = await call(admin, 'DELETE', `/admin/reservations/${h1!.id}`)
    t.same(r.body, { released: h1!.id, kind: 'organization' })
    t.equal((await call(admin, 'DELETE', `/admin/reservations/${h1!.id}`)).status, 404, 'gone')
    t.equal((await call(admin, 'GET', '/admin/organizations/acme/balance')).body.available, '9.000000')
  })
}

t.test('circuits, config view, OpenAPI document; no admin listener without admin config', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  const { admin, app } = await running(t, ledger)
  const gw = app.gateway
  const model = gw.catalog.all()[0]!
  const d = model.deployments[0]!
  const key = Circuits.key(d)
  let r = await call(admin, 'GET', '/admin/circuits')
  t.match(r.body.data.find((c: { key: string }) => c.key === key), { state: 'closed', failures: 0, openedAt: null, provider: d.provider })
  for (let i = 0; i < gw.circuits.options(d).failureThreshold; i++) gw.circuits.failure(d)
  r = await call(admin, 'GET', '/admin/circuits')
  t.match(r.body.data.find((c: { key: string }) => c.key === key), { state: 'open' })
  t.ok(r.body.data.find((c: { key: string }) => c.key === key).models.includes(model.id))
  r = await call(admin, 'POST', '/admin/circuits/reset', { key })
  t.match(r.body, { key, state: 'closed', failures: 0 })
  t.equal(gw.circuits.isOpen(d), false, 'closed in the gateway')
  t.equal((await call(admin, 'POST', '/admin/circuits/reset', { key: 'no/such' })).status, 404)

  r = await call(admin, 'GET', '/admin/config')
  t.equal(r.status, 200)
  t.type(r.body.version, 'string')
  t.notOk(r.text.includes(TEST_KEY), 'client keys masked')
  t.notOk(r.text.includes(ADMIN_KEY), 'admin keys masked')
  t.notOk(r.text.includes(hashKey(REVOKED_ADMIN_KEY)), 'key hashes masked')
  t.equal(r.body.config.admin.keys[0].id, 'ops', 'ids kept')
  t.equal(r.body.config.admin.keys[0].key, undefined, 'held as its hash only')
  t.equal(r.body.config.admin.keys[0].hash, '***')
  t.equal(r.body.config.server.port, gw.config.server.port, 'the rest is shown')

  const doc = await call(admin, 'GET', '/admin/openapi.json', undefined, {})
  t.equal(doc.status, 200, 'the OpenAPI document needs no key')
  const api = doc.body
  t.equal(api.openapi, '3.1.0')
  const routes: Array<[string, string]> = [
    ['get', '/admin/organizations'], ['post', '/admin/organizations'], ['get', '/admin/organizations/{id}'],
    ['get', '/admin/organizations/{id}/balance'], ['post', '/admin/organizations/{id}/topup'],
    ['get', '/admin/projects'], ['post', '/admin/projects'], ['get', '/admin/keys'], ['post', '/admin/keys'], ['post', '/admin/keys/{id}/revoke'],
    ['get', '/admin/keys/{id}'], ['patch', '/admin/keys/{id}'], ['post', '/admin/keys/{id}/rotate'],
    ['get', '/admin/prices'], ['put', '/admin/prices'], ['get', '/admin/usage'], ['get', '/admin/usage/export'],
    ['get', '/admin/reservations'], ['delete', '/admin/reservations/{id}'], ['get', '/admin/circuits'], ['post', '/admin/circuits/reset'], ['get', '/admin/config'],
    ['get', '/admin/usage/summary'], ['get', '/admin/calls/summary'], ['get', '/admin/providers'],
    ['get', '/admin/usage/total'], ['get', '/admin/calls/latency'], ['get', '/admin/calls/failed'],
    ['get', '/admin/organizations/{id}/journal'], ['post', '/admin/organizations/{id}/adjustments'], ['post', '/admin/organizations/{id}/refunds'],
    ['get', '/admin/verify'], ['get', '/admin/audit'],
  ]
  for (const [method, path] of routes) t.ok(api.paths?.[path]?.[method], `${method.toUpperCase()} ${path} documented`)
  t.equal(Object.values(api.paths).reduce((n: number, p: any) => n + Object.keys(p).length, 0), routes.length, 'and nothing else')
  // Every schema in it compiles as JSON Schema 2020-12 (OpenAPI 3.1's dialect), references resolved.
  const ajv = new Ajv2020({ strict: false })
  for (const [name, s] of Object.entries(api.components?.schemas ?? {})) ajv.addSchema(s as object, `#/components/schemas/${name}`)
  let compiled = 0
  const visit = (s: unknown, where: string): void => {
    if (!s || typeof s !== 'object') return
    try {
      ajv.compile({ ...(s as object), $id: `urn:check:${compiled++}` })
    } catch (err) {
      t.fail(`${where}: ${(err as Error).message}`)
    }
  }
  for (const [path, ops] of Object.entries<any>(api.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      t.ok(Object.keys(op.responses ?? {}).length > 0, `${method} ${path} has responses`)
      for (const p of op.parameters ?? []) {
        t.ok(p.name && ['path', 'query'].includes(p.in), `${method} ${path} parameter ${p.name}`)
        visit(p.schema, `${method} ${path} ${p.name}`)
      }
      for (const c of Object.values<any>(op.requestBody?.content ?? {})) visit(c.schema, `${method} ${path} body`)
    }
  }
  t.ok(compiled > 10, 'schemas were checked')

  const clash = await buildTestApp({ doc: { admin: { port: 0, keys: [{ id: 'x', key: TEST_KEY }] } } })
  t.teardown(() => clash.close())
  await t.rejects(startAdmin(clash), /also a client key/, 'an admin key that is a client key stops start-up')

  const plain = await buildTestApp({})
  t.teardown(() => plain.close())
  t.equal(await startAdmin(plain), undefined, 'no admin block: no admin listener')
})

t.test('a streamed export spans many ledger pages; extra routes; the admin listener closes with the gateway', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  const app = await buildTestApp({
    ledger,
    doc: { admin: { port: 0, keys: [{ id: 'ops', key: ADMIN_KEY }] } },
  })
  const admin = await startAdmin(app, {
    extraRoutes: a => {
      a.get('/metrics', async () => 'up 1\n')
      a.get('/private-extra', async () => 'secret stuff')
    },
    publicPaths: ['/metrics'],
  })
  const base = admin!.address
  t.match(base, /^http:\/\/127\.0\.0\.1:\d+$/, 'default host 127.0.0.1')
  t.equal(await (await fetch(`${base}/metrics`)).text(), 'up 1\n', 'a public extra route')
  t.equal((await fetch(`${base}/private-extra`)).status, 401, 'other extra routes need the admin key')
  t.equal((await fetch(`${base}/private-extra`, { headers: adminAuth() })).status, 200)

  const N = 2345 // more than two export pages of 1000
  const t0 = Date.parse('2025-05-01T00:00:00Z')
  await Promise.all(Array.from({ length: N }, (_, i) => ledger.charge(undefined, record({ traceId: `big-${i}`, time: t0 + (i % 400) }))))
  const csv = await (await fetch(`${base}/admin/usage/export?format=csv`, { headers: adminAuth() })).text()
  const rows = csv.split('\r\n').filter(Boolean).slice(1)
  t.equal(rows.length, N, 'every record once')
  t.equal(new Set(rows.map(r => r.split(',')[6])).size, N, 'distinct trace ids')
  const json = JSON.parse(await (await fetch(`${base}/admin/usage/export?format=json&from=2025-05-01T00:00:00.100Z`, { headers: adminAuth() })).text())
  t.equal(json.length, 5 * 300 + 245, 'the range applies across pages (time % 400 >= 100)')

  await app.close()
  await t.rejects(fetch(`${base}/admin/organizations`, { headers: adminAuth() }), 'closed with the gateway')
})

t.test('SQLite ledger', async t => {
  await suite(t, async sub => {
    const l = await openLedger({ backend: 'sqlite', path: ':memory:' })
    await l.migrate()
    sub.teardown(() => l.close())
    return l
  }, 'sqlite')
})

t.test('SQLite ledger: balances stay INTEGER in the file (typeof), at the largest exact amount and after refused top-ups', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-exact-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'ledger.db')
  const ledger = await openLedger({ backend: 'sqlite', path })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  const { admin } = await running(t, ledger)
  await ledger.createOrganization('acme')
  t.equal((await call(admin, 'POST', '/admin/organizations/acme/topup', { amount: '9007199254.740990' })).status, 200)
  const tries = await Promise.all(['0.000001', '0.000001', '1', '9007199254.740991'].map(amount => call(admin, 'POST', '/admin/organizations/acme/topup', { amount })))
  t.same(tries.map(x => x.status).sort(), [200, 400, 400, 400])
  await t.rejects(ledger.topUp('acme', 0.5), { name: 'LedgerAmountError' }, 'the ledger itself refuses a fraction of a micro-unit')
  await t.rejects(ledger.topUp('acme', 2 ** 60), { name: 'LedgerAmountError' })
  const db = new Database(path, { readonly: true })
  t.teardown(() => db.close())
  t.same(db.prepare("SELECT balance, typeof(balance) AS type FROM organizations WHERE id = 'acme'").get(), { balance: Number.MAX_SAFE_INTEGER, type: 'integer' })
})

t.test('PostgreSQL ledger', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  await suite(t, pgLedgers(t, url, 'admin_api'), 'postgres')
})
