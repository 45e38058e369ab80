/**
 * @module test/admin/key-holds – a ledger key's budget holds in /admin/reservations and the admin
 * CLI's `holds list|release`, through a listening gateway on PostgreSQL: a call in flight on a key
 * with a budget holds twice (its organization's balance, kind `organization`, and its key's
 * budget, kind `key`, with the key's id and organization), both listed; `kind`, `key` and
 * `organization` filter; a hold a crashed replica left on the key's budget refuses its calls
 * until an operator releases it by id (audited), then the budget is usable again; an unknown id
 * gets the one 404 body; a bad filter gets 400 naming it. On SQLite (holds in the process) the
 * list stays `stored: false` and a release 409.
 */
import t, { type Test } from 'tap'
import pg from 'pg'
import { startAdmin } from '../../admin/app.ts'
import { main } from '../../cli/admin.ts'
import { gwError } from '../../core/errors/errors.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { KeyBudgets, KeyHold, Ledger } from '../../core/ledger/ledger.ts'
import { PostgresLedger } from '../../core/ledger/postgres.ts'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { ADMIN_KEY, adminCall } from '../helpers/admin.ts'
import { databaseUrl, randomId } from '../helpers/backends.ts'
import { until } from '../helpers/until.ts'

/** A model whose upstream answers after LATENCY_MS, so a call stays in flight that long. */
const LATENCY_MS = 1500
const DOC = {
  providers: [{ name: 'echo-slow', adapter: 'echo', config: { protocol: 'chat', latencyMs: LATENCY_MS } }],
  models: [{ id: 'echo/slow', input_modalities: ['text'], price: { input: 1, output: 2 }, deployments: [{ provider: 'echo-slow', model: 'echo-slow' }] }],
}

async function gateway (t: Test, ledger: Ledger): Promise<{ gateway: string, admin: string }> {
  const app = await buildTestApp({
    ledger,
    pipeline: [{ plugin: 'auth', config: { ...AUTH_ENTRY.config, ledgerCacheMs: 0 } }, { plugin: 'balance' }],
    doc: { ...DOC, admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }] } },
    env: { ADMIN_KEY },
  })
  t.teardown(() => app.close())
  const admin = (await startAdmin(app))!.address
  return { gateway: await listen(app), admin }
}

async function chat (gateway: string, key: string): Promise<{ status: number, body: { error?: { message: string } } }> {
  const r = await fetch(`${gateway}/v1/chat/completions`, {
    method: 'POST', headers: { ...auth(key), 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'echo/slow', max_tokens: 40, messages: [{ role: 'user', content: 'hold me' }] }),
  })
  return { status: r.status, body: await r.json() }
}

async function cli (env: Record<string, string>, ...args: string[]): Promise<{ code: number, out: string, err: string }> {
  let out = ''
  let err = ''
  const code = await main(args, env, { write: s => { out += s } }, { write: s => { err += s } })
  return { code, out, err }
}

interface HoldRow { id: string, kind: string, keyId: string | null, organization: string, amount: string, state: string, owner: string | null, traceId: string | null }
const ids = (rows: HoldRow[]): string[] => rows.map(h => h.id).sort()

t.test('PostgreSQL: key budget holds listed, filtered, released', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  const schema = `admin_key_holds_${randomId()}`
  const ledger = new PostgresLedger({ url, schema })
  t.teardown(async () => {
    await ledger.close()
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await c.end()
  })
  await ledger.migrate()
  const { gateway: gw, admin } = await gateway(t, ledger)
  const list = async (query = ''): Promise<HoldRow[]> => {
    const r = await adminCall(admin, 'GET', `/admin/reservations${query}`)
    if (r.status !== 200) throw new Error(`GET /admin/reservations${query}: ${r.status} ${r.text}`)
    return r.body.data
  }
  for (const id of ['acme', 'beta']) {
    t.equal((await adminCall(admin, 'POST', '/admin/organizations', { id })).status, 201)
    t.equal((await adminCall(admin, 'POST', `/admin/organizations/${id}/topup`, { amount: '100' })).status, 200)
  }
  const key = await adminCall(admin, 'POST', '/admin/keys', { organization: 'acme', id: 'budgeted', lifetimeBudget: '0.002' })
  t.equal(key.status, 201)
  const secret: string = key.body.secret

  await t.test('a call in flight: its organization hold and its key hold, each with its kind', async t => {
    const pending = chat(gw, secret)
    t.ok(await until(async () => (await list()).length === 2), 'two holds while the call runs')
    const all = await list()
    const org = all.find(h => h.kind === 'organization')!
    const kh = all.find(h => h.kind === 'key')!
    t.match(org, { organization: 'acme', keyId: null, state: 'live' }, 'the balance hold, as before, with kind organization')
    t.match(kh, { organization: 'acme', keyId: 'budgeted', state: 'live', amount: org.amount, traceId: org.traceId }, 'the key\'s budget hold: its key and the key\'s organization')
    t.not(kh.id, org.id, 'two ids')
    t.same(ids(await list('?kind=key')), [kh.id])
    t.same(ids(await list('?kind=organization')), [org.id])
    t.same(ids(await list('?key=budgeted')), [kh.id], '?key= lists that key\'s holds')
    t.same(await list('?key=nope'), [], 'an unknown key: none')
    t.same(ids(await list('?organization=acme')), ids([org, kh]), '?organization= lists both kinds of the organization')
    t.same(ids(await list('?organization=acme&kind=key')), [kh.id], 'filters combine')
    t.same(await list('?organization=beta'), [])
    const balance = await adminCall(admin, 'GET', '/admin/organizations/acme/balance')
    t.equal(balance.body.reserved, org.amount, 'the organization\'s reserved counts its balance holds only')
    t.equal((await pending).status, 200)
    t.ok(await until(async () => (await list()).length === 0), 'both gone once charged')
  })

  await t.test('a hold a crashed replica left on the key\'s budget: refused until released', async t => {
    const k = (await ledger.listKeys()).find(x => x.id === 'budgeted')!
    const left = 2000 - (k.spent ?? 0)
    t.ok(left > 0, `${left} micro-units of the budget left`)
    // Another replica holds the rest of the budget, then dies without releasing it (close stops its renewals; the row stays until it expires).
    const dead = new PostgresLedger({ url, schema, owner: 'dead-replica:1', holdMarginMs: 600_000 })
    const leaked = await (dead.keyBudgets as KeyBudgets).reserve('budgeted', left, undefined, { traceId: 'lost-call' }) as KeyHold
    t.type(leaked, 'object')
    await dead.close()
    const refused = await chat(gw, secret)
    t.equal(refused.status, 402, 'the key\'s budget is held in full')
    t.match(refused.body.error?.message, /budget/)
    t.match(await list('?key=budgeted'), [{ id: leaked.id, kind: 'key', keyId: 'budgeted', organization: 'acme', owner: 'dead-replica:1', traceId: 'lost-call', state: 'live' }])

    const r = await adminCall(admin, 'DELETE', `/admin/reservations/${leaked.id}`)
    t.equal(r.status, 200)
    t.same(r.body, { released: leaked.id, kind: 'key' })
    t.same(await list(), [], 'gone')
    t.equal((await chat(gw, secret)).status, 200, 'the key\'s budget is usable again')
    const audit = await adminCall(admin, 'GET', `/admin/audit?action=hold.release&target=${leaked.id}`)
    t.match(audit.body.data, [{ actor: 'admin:ops', action: 'hold.release', target: leaked.id, result: 'ok', before: { id: leaked.id, keyId: 'budgeted', amount: left, traceId: 'lost-call' }, after: null }],
      'audited with the hold as it was')

    const again = await adminCall(admin, 'DELETE', `/admin/reservations/${leaked.id}`)
    const unknown = await adminCall(admin, 'DELETE', '/admin/reservations/no-such-hold')
    t.equal(again.status, 404)
    t.same(again.body, { error: { code: 404, message: gwError('GW_ERR_HOLD_UNKNOWN', [leaked.id]).message } }, 'a released key hold: the unknown hold\'s 404')
    t.same(unknown.body, { error: { code: 404, message: gwError('GW_ERR_HOLD_UNKNOWN', ['no-such-hold']).message } })
  })

  await t.test('bad filters: 400 naming the field', async t => {
    for (const [query, path] of [['?key=', '/querystring/key'], [`?key=${'k'.repeat(201)}`, '/querystring/key'], ['?kind=slice', '/querystring/kind'], ['?organization=', '/querystring/organization']]) {
      const r = await adminCall(admin, 'GET', `/admin/reservations${query}`)
      t.equal(r.status, 400, query)
      t.equal(r.body.error.code, 400)
      t.equal(r.body.error.metadata?.path, path, `${query}: ${path}`)
    }
  })

  await t.test('the admin CLI, on the ledger and over --url', async t => {
    const dead = new PostgresLedger({ url, schema, owner: 'dead-replica:2', holdMarginMs: 600_000 })
    const a = await (dead.keyBudgets as KeyBudgets).reserve('budgeted', 1, undefined, { traceId: 'lost-a' }) as KeyHold
    const b = await (dead.keyBudgets as KeyBudgets).reserve('budgeted', 1, undefined, { traceId: 'lost-b' }) as KeyHold
    const o = await dead.reserve('acme', 5, { traceId: 'lost-o' })
    await dead.close()
    const onLedger = ['--ledger-url', url, '--schema', schema]
    const overUrl = ['--url', admin]
    const env = { GW_ADMIN_KEY: ADMIN_KEY }
    for (const [how, via, held] of [['ledger', onLedger, a], ['--url', overUrl, b]] as const) {
      let r = await cli(env, ...via, 'holds', 'list', '--key', 'budgeted', '--json')
      t.equal(r.code, 0, `${how}: ${r.err}`)
      t.same(ids(JSON.parse(r.out)), [a.id, b.id].filter(id => how === 'ledger' || id === b.id).sort(), `${how}: the key's holds (a released on the ledger before --url)`)
      r = await cli(env, ...via, 'holds', 'list', '--kind', 'organization', '--json')
      t.same(ids(JSON.parse(r.out)), [o!.id], `${how}: --kind organization`)
      r = await cli(env, ...via, 'holds', 'list', '--org', 'acme')
      t.match(r.out, /kind\s+key/, `${how}: the table shows kind and key`)
      t.match(r.out, new RegExp(`${held.id}\\s.*key\\s+budgeted`))
      t.same(await cli(env, ...via, 'holds', 'release', held.id), { code: 0, out: `released key hold ${held.id}\n`, err: '' }, `${how}: released`)
      r = await cli(env, ...via, 'holds', 'list', '--kind', 'bogus')
      t.equal(r.code, 2, `${how}: a bad --kind is a usage error`)
      t.match(r.err, /--kind must be organization or key/)
    }
    t.same(await cli(env, ...onLedger, 'holds', 'release', o!.id), { code: 0, out: `released hold ${o!.id}\n`, err: '' }, 'an organization hold: as before')
    t.same(await list(), [])
  })
})

t.test('SQLite: key holds live in the process, as balance holds do', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  const { admin } = await gateway(t, ledger)
  await ledger.createOrganization('acme')
  await ledger.createKey({ id: 'budgeted', hash: 'a'.repeat(64), prefix: 'sk-gw-b', organization: 'acme', lifetimeBudget: 2000 })
  const h = await (ledger.keyBudgets as KeyBudgets).reserve('budgeted', 100, undefined) as KeyHold
  for (const q of ['', '?key=budgeted', '?kind=key']) t.same((await adminCall(admin, 'GET', `/admin/reservations${q}`)).body, { stored: false, data: [] }, `stored: false${q}`)
  t.equal((await adminCall(admin, 'GET', '/admin/reservations?key=')).status, 400, 'a bad filter is still 400')
  const r = await adminCall(admin, 'DELETE', `/admin/reservations/${h.id}`)
  t.equal(r.status, 409)
  t.same(r.body, { error: { code: 409, message: gwError('GW_ERR_HOLDS_NOT_STORED').message } })
})
