/**
 * @module test/integration/key-budgets – ledger keys' budgets are held like the balance, through
 * listening gateways with 100 calls in flight: on SQLite (one gateway) and on PostgreSQL (two
 * gateways sharing the ledger). What the served calls are charged never passes the window budget
 * (as balance allows: by at most one call's cost over its reservation, which echo never has);
 * refusals are 429 with Retry-After until the window ends; the key's window spend equals the sum
 * of its charges; a lifetime budget spent answers 402; count_tokens is refused too.
 */
import t, { type Test } from 'tap'
import { startAdmin } from '../../admin/app.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { PostgresLedger } from '../../core/ledger/postgres.ts'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { ADMIN_KEY, adminCall } from '../helpers/admin.ts'
import { databaseUrl, randomId } from '../helpers/backends.ts'
import { until } from '../helpers/until.ts'

const BUDGET = '0.002'
const CALLS = 100

interface Gw { gateway: string, admin: string, close: () => Promise<void> }

/** What these tests read of an answer: an error's message, or a completion's usage. */
interface Answer { error?: { message: string, code?: unknown }, usage?: { prompt_tokens: number, completion_tokens: number } }

async function gateway (t: Test, ledger: Ledger): Promise<Gw> {
  const app = await buildTestApp({
    ledger,
    pipeline: [{ plugin: 'auth', config: { ...AUTH_ENTRY.config, ledgerCacheMs: 0 } }, { plugin: 'balance' }],
    doc: { admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }] } },
    env: { ADMIN_KEY },
  })
  let closed = false
  const close = async () => { if (!closed) { closed = true; await app.close() } }
  t.teardown(close)
  const admin = (await startAdmin(app))!.address
  return { gateway: await listen(app), admin, close }
}

async function chat (gateway: string, key: string, i: number, route: 'chat' | 'count' = 'chat'): Promise<{ status: number, body: Answer, retryAfter: string | null }> {
  const r = route === 'chat'
    ? await fetch(`${gateway}/v1/chat/completions`, {
      method: 'POST', headers: { ...auth(key), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'echo/echo-1', max_tokens: 40, messages: [{ role: 'user', content: `call ${i}: tell me something` }] }),
    })
    : await fetch(`${gateway}/v1/messages/count_tokens`, {
      method: 'POST', headers: { ...auth(key), 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'echo/echo-1', messages: [{ role: 'user', content: 'hi' }] }),
    })
  return { status: r.status, body: await r.json(), retryAfter: r.headers.get('retry-after') }
}

const micros = (s: string): number => Math.round(Number(s) * 1e6)

async function suite (t: Test, gws: Gw[], ledger: Ledger): Promise<void> {
  const admin = gws[0].admin
  t.equal((await adminCall(admin, 'POST', '/admin/organizations', { id: 'acme' })).status, 201)
  t.equal((await adminCall(admin, 'POST', '/admin/organizations/acme/topup', { amount: '100' })).status, 200)

  await t.test(`${CALLS} calls in flight against a day budget`, async t => {
    const k = await adminCall(admin, 'POST', '/admin/keys', { organization: 'acme', id: 'daily', budget: { amount: BUDGET, window: 'day' } })
    t.equal(k.status, 201)
    t.match(k.body.budget, { amount: '0.002000', window: 'day', spent: '0.000000' })
    const results = await Promise.all(Array.from({ length: CALLS }, (_, i) => chat(gws[i % gws.length].gateway, k.body.secret, i)))
    const ok = results.filter(r => r.status === 200)
    const refused = results.filter(r => r.status === 429)
    t.equal(ok.length + refused.length, CALLS, 'only 200 and 429')
    t.ok(ok.length > 0 && refused.length > 0, `${ok.length} served, ${refused.length} refused`)
    const dayLeft = Math.ceil((Math.ceil(Date.now() / 86_400_000) * 86_400_000 - Date.now()) / 1000)
    t.ok(refused.every(r => r.body.error?.message.includes('budget for the current day') && Math.abs(Number(r.retryAfter) - dayLeft) <= 5), 'the window budget\'s 429, Retry-After until the day ends')
    // Then one at a time (nothing else holding) until the budget refuses: it is spent to within one call's reservation.
    let served = ok.length
    for (let i = 0; i < CALLS && (await chat(gws[i % gws.length].gateway, k.body.secret, i)).status === 200; i++) served++
    for (const g of gws) await g.close()
    const charged = (await ledger.queryUsage({ keyId: 'daily', limit: 1000 })).map(u => u.cost)
    const sum = charged.reduce((a, b) => a + b, 0)
    t.equal(charged.length, served, 'every served call charged once')
    t.ok(sum <= micros(BUDGET), `${sum} micro-units charged with ${CALLS} in flight: within the budget (${micros(BUDGET)})`)
    t.ok(sum > micros(BUDGET) - 100, `and spent to within one call's reservation (about 60 micro-units) of it`)
    const key = (await ledger.listKeys()).find(x => x.id === 'daily')!
    t.equal(key.windowSpent, sum, 'the key\'s window spend is exactly its charges')
    t.equal(key.spent, sum, 'its lifetime spend too')
    // A new amount keeps the window's spend; another window restarts it (spend under a day is no month's).
    await ledger.updateKey('daily', { budget: { amount: 3_000_000, window: 'day' } })
    t.equal((await ledger.listKeys()).find(x => x.id === 'daily')!.windowSpent, sum, 'a new amount: the window\'s spend kept')
    await ledger.updateKey('daily', { budget: { amount: 3_000_000, window: 3600 } })
    const moved = (await ledger.listKeys()).find(x => x.id === 'daily')!
    t.same([moved.windowSpent, moved.windowStart, moved.spent], [undefined, undefined, sum], 'another window: its count restarts, the lifetime spend stays')
  })
}

async function lifetime (t: Test, g: Gw): Promise<void> {
  const admin = g.admin
  t.equal((await adminCall(admin, 'POST', '/admin/organizations', { id: 'solo' })).status, 201)
  t.equal((await adminCall(admin, 'POST', '/admin/organizations/solo/topup', { amount: '100' })).status, 200)
  const k = await adminCall(admin, 'POST', '/admin/keys', { organization: 'solo', id: 'once', lifetimeBudget: '0.0002' })
  let status = 200
  let last: Awaited<ReturnType<typeof chat>> | undefined
  for (let i = 0; i < 20 && status === 200; i++) {
    last = await chat(g.gateway, k.body.secret, i)
    status = last.status
  }
  t.equal(status, 402, 'a lifetime budget spent: 402')
  t.equal(last?.body.error?.message, 'This API key\'s lifetime budget does not cover this request.')
  const gone = await until(async () => (await chat(g.gateway, k.body.secret, 99, 'count')).status === 402, 3000)
  t.ok(gone || (await chat(g.gateway, k.body.secret, 0)).status === 402, 'count_tokens or the next call refused alike')
  const shown = (await adminCall(admin, 'GET', '/admin/keys/once')).body
  t.ok(micros(shown.spent) <= micros('0.0002'), `spent ${shown.spent} within the lifetime budget`)
  const seconds = await adminCall(admin, 'POST', '/admin/keys', { organization: 'solo', id: 'minutely', budget: { amount: '0', window: 60 } })
  const r = await chat(g.gateway, seconds.body.secret, 0)
  t.equal(r.status, 429, 'a budget of 0 per 60 s')
  t.ok(Number(r.retryAfter) >= 1 && Number(r.retryAfter) <= 60, 'Retry-After within the minute')
  t.match(r.body.error?.message, /60-second window/)
  t.equal((await adminCall(admin, 'PATCH', '/admin/keys/minutely', { budget: null })).status, 200)
  t.equal((await chat(g.gateway, seconds.body.secret, 0)).status, 200, 'the budget cleared: served')
}

t.test('SQLite ledger, one gateway', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  await suite(t, [await gateway(t, ledger)], ledger)
  await t.test('lifetime and seconds windows', async t => lifetime(t, await gateway(t, ledger)))
})

t.test('budgets are held with enforce: false too (it turns off the organization\'s balance only)', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  const app = await buildTestApp({ ledger, pipeline: [{ plugin: 'auth', config: { ...AUTH_ENTRY.config, ledgerCacheMs: 0 } }, { plugin: 'balance', config: { enforce: false } }] })
  t.teardown(() => app.close())
  const url = await listen(app)
  await ledger.createOrganization('broke')
  const { hashKey } = await import('../../core/ledger/keys.ts')
  const secret = 'sk-gw-enforce-off-00000001'
  await ledger.createKey({ id: 'capped', hash: hashKey(secret), prefix: 'sk-gw-enfo', organization: 'broke', lifetimeBudget: 150 })
  const statuses: number[] = []
  for (let i = 0; i < 10; i++) statuses.push((await chat(url, secret, i)).status)
  t.equal(statuses[0], 200, 'the organization has no balance: served anyway (enforce: false)')
  t.ok(statuses.includes(402), `the key's lifetime budget still refuses: ${statuses.join(' ')}`)
  await app.close()
  t.ok(((await ledger.listKeys())[0]!.spent ?? 0) <= 150, 'within it')
})

t.test('PostgreSQL ledger, two gateways sharing it', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  const schema = `key_budgets_${randomId()}`
  const open = async () => {
    const l = new PostgresLedger({ url, schema })
    await l.migrate()
    return l
  }
  const [a, b, reader] = [await open(), await open(), await open()]
  t.teardown(async () => {
    await Promise.all([a.close(), b.close()])
    await (reader as unknown as { pool: { query (q: string): Promise<unknown> } }).pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await reader.close()
  })
  await suite(t, [await gateway(t, a), await gateway(t, b)], reader)
  await t.test('lifetime and seconds windows', async t => lifetime(t, await gateway(t, a)))
})
