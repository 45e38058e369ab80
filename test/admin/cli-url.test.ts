/** @module test/admin/cli-url – the admin CLI with --url drives a listening gateway's admin API (SQLite and PostgreSQL ledgers). */
import t, { type Test } from 'tap'
import { main } from '../../cli/admin.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { hashKey } from '../../core/ledger/keys.ts'
import { TEST_KEY } from '../helpers/build-test-app.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import { ADMIN_KEY, running } from '../helpers/admin.ts'

interface Run { code: number, out: string, err: string }

async function cli (env: Record<string, string>, ...args: string[]): Promise<Run> {
  let out = ''
  let err = ''
  const code = await main(args, env, { write: s => { out += s } }, { write: s => { err += s } })
  return { code, out, err }
}

async function sqlite (t: Test): Promise<Ledger> {
  const l = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await l.migrate()
  t.teardown(() => l.close())
  return l
}

t.test('every command over --url, as the ledger mode prints it', async t => {
  const ledger = await sqlite(t)
  const { admin } = await running(t, ledger)
  const env = { GW_ADMIN_KEY: ADMIN_KEY }
  const run = (...args: string[]): Promise<Run> => cli(env, '--url', admin, ...args)

  t.same(await run('org', 'create', 'acme', '--name', 'Acme Inc'), { code: 0, out: 'created organization acme\n', err: '' })
  t.equal((await ledger.getOrganization('acme'))?.name, 'Acme Inc', 'in the ledger')
  let r = await run('org', 'create', 'acme')
  t.equal(r.code, 1, 'an API error: exit 1')
  t.match(r.err, /409: Organization "acme" already exists/)
  t.same(await run('project', 'create', 'web', '--org', 'acme'), { code: 0, out: 'created project web in organization acme\n', err: '' })
  t.same(await run('balance', 'topup', 'acme', '12.50'), { code: 0, out: 'acme balance 12.500000\n', err: '' })
  r = await run('balance', 'show', 'acme', '--json')
  t.same(JSON.parse(r.out), { organization: 'acme', balance: '12.500000', reserved: '0.000000', available: '12.500000' })
  r = await run('balance', 'show', 'acme')
  t.match(r.out, /^organization\s+acme\nbalance\s+12\.500000\n/)
  r = await run('balance', 'show', 'nope')
  t.equal(r.code, 1)
  t.match(r.err, /404: Unknown organization "nope"/)

  r = await run('key', 'create', '--org', 'acme', '--project', 'web', '--name', 'ci', '--models', 'echo/echo-1,echo/echo-text', '--id', 'ci-key')
  t.equal(r.code, 0)
  const secret = /secret\s+(\S+)/.exec(r.out)![1]!
  t.equal((await ledger.findKeyByHash(hashKey(secret)))?.id, 'ci-key')
  t.match(r.err, /shown only now/)
  r = await run('key', 'list', '--json')
  t.match(JSON.parse(r.out), [{ id: 'ci-key', organization: 'acme', project: 'web', models: ['echo/echo-1', 'echo/echo-text'], revokedAt: null }])
  t.notOk(r.out.includes(secret))
  t.match((await run('key', 'list')).out, /^id\s+prefix\s+name\s+org\s+project\s+created\s+revoked\s+expires\s+budget\s+spent\s+rpm\s+tpm\s+last used\s+tags\nci-key\s+sk-gw-/)
  t.same(await run('key', 'revoke', 'ci-key'), { code: 0, out: 'revoked key ci-key\n', err: '' })
  t.match((await run('key', 'revoke', 'ci-key')).err, /already revoked/)

  r = await run('price', 'set', 'echo/echo-1', '--input', '3', '--output', '15', '--cached', '0.3')
  t.equal(r.code, 0)
  t.same(await ledger.getPrice('echo/echo-1'), { input: 3, cachedInput: 0.3, output: 15 })
  t.same(JSON.parse((await run('price', 'show', 'echo/echo-1', '--json')).out), { model: 'echo/echo-1', input: 3, cachedInput: 0.3, output: 15 })
  r = await run('price', 'show', 'echo/echo-text')
  t.equal(r.code, 1)
  t.match(r.err, /no ledger price/)

  r = await run('holds', 'list')
  t.equal(r.code, 1, 'SQLite: no stored holds, as in ledger mode')
  t.match(r.err, /PostgreSQL ledger only/)

  await ledger.charge(undefined, {
    time: Date.parse('2025-01-15T00:00:00Z'), keyId: 'ci-key', organization: 'acme', model: 'echo/echo-1', provider: 'echo', traceId: 'tr-1',
    inputTokens: 1, cachedInputTokens: 0, outputTokens: 2, cost: 42, estimated: true,
  })
  const viaApi = await run('usage', 'export', '--from', '2025-01-01', '--to', '2025-02-01', '--format', 'csv')
  t.equal(viaApi.code, 0)
  t.equal(viaApi.out.split('\r\n').filter(Boolean).length, 2, 'header and one record')
  t.match(viaApi.out, /tr-1/)
  t.equal((await run('usage', 'export', '--from', '2025-02-01', '--format', 'csv')).out.split('\r\n').filter(Boolean).length, 1, 'the range applies')
  t.same(JSON.parse((await run('usage', 'export', '--format', 'json')).out).map((u: { traceId: string }) => u.traceId), ['tr-1'])

  // The key comes from --admin-key as well; bad ones and wrong combinations are refused.
  t.equal((await cli({}, '--url', admin, '--admin-key', ADMIN_KEY, 'key', 'list')).code, 0, '--admin-key')
  r = await cli({}, '--url', admin, 'key', 'list')
  t.equal(r.code, 2)
  t.match(r.err, /admin key/)
  r = await cli({ GW_ADMIN_KEY: TEST_KEY }, '--url', admin, 'key', 'list')
  t.equal(r.code, 1, 'a client key is refused')
  t.match(r.err, /401: Invalid admin key/, 'as a wrong key is')
  r = await cli({ GW_ADMIN_KEY: 'adm-wrong-0123456789' }, '--url', admin, 'key', 'list')
  t.match(r.err, /401/)
  t.equal((await cli(env, '--url', admin, '--sqlite', '/tmp/x.db', 'key', 'list')).code, 2, '--url and --sqlite')
  t.equal((await cli(env, '--url', admin, 'migrate')).code, 2, 'migrate is ledger-only')
  t.equal((await cli(env, '--url', 'ftp://x', 'key', 'list')).code, 2, 'not an http URL')
  t.equal((await cli(env, '--admin-key', 'k', '--sqlite', '/tmp/x.db', 'key', 'list')).code, 2, '--admin-key without --url')
  r = await cli(env, '--url', 'http://127.0.0.1:1', 'key', 'list')
  t.equal(r.code, 1)
  t.match(r.err, /cannot reach the admin API/)
})

t.test('holds list and release over --url (PostgreSQL)', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  const ledger = await pgLedgers(t, url, 'admin_cli')(t)
  const { admin } = await running(t, ledger)
  const env = { GW_ADMIN_KEY: ADMIN_KEY }
  await ledger.createOrganization('acme')
  await ledger.topUp('acme', 5_000_000)
  const h = await ledger.reserve('acme', 1_000_000, { traceId: 'trace-x' })
  let r = await cli(env, '--url', admin, 'holds', 'list', '--org', 'acme', '--json')
  t.equal(r.code, 0)
  t.match(JSON.parse(r.out), [{ id: h!.id, organization: 'acme', amount: '1.000000', state: 'live', traceId: 'trace-x' }])
  t.same(await cli(env, '--url', admin, 'holds', 'release', h!.id), { code: 0, out: `released hold ${h!.id}\n`, err: '' })
  r = await cli(env, '--url', admin, 'holds', 'release', h!.id)
  t.equal(r.code, 1)
  t.match(r.err, /404/)
  t.same(await ledger.listHolds(), [])
})
