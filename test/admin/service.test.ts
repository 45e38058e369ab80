/**
 * @module test/admin/service – the admin API and the CLI's ledger mode refuse the same things with
 * the same GW_ERR_* error: one status and text in the API's body, the same text (as a clause) on
 * the CLI's stderr with exit code 1, over one SQLite ledger file both use.
 */
import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AdminService } from '../../admin/service.ts'
import { BalanceService } from '../../admin/balances.ts'
import { main } from '../../cli/admin.ts'
import { ERRORS, isGatewayError } from '../../core/errors/errors.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { adminCall, running } from '../helpers/admin.ts'

t.test('each refusal: the same code, status and text from the API and the CLI', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-admin-service-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'ledger.db')
  const ledger = await openLedger({ backend: 'sqlite', path })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  const { admin } = await running(t, ledger)
  const cli = async (...args: string[]): Promise<{ code: number, out: string, err: string }> => {
    let out = ''
    let err = ''
    const code = await main(['--sqlite', path, ...args], {}, { write: s => { out += s } }, { write: s => { err += s } })
    return { code, out, err }
  }

  t.equal((await cli('org', 'create', 'acme')).code, 0)
  t.equal((await cli('project', 'create', 'web', '--org', 'acme')).code, 0)
  t.equal((await cli('key', 'create', '--org', 'acme', '--id', 'k1')).code, 0)
  t.equal((await cli('key', 'create', '--org', 'acme', '--id', 'k2')).code, 0)
  t.equal((await cli('key', 'revoke', 'k2')).code, 0)

  const cases: Array<{ argv: string[], method: string, url: string, body?: unknown, status: number, message: string, cli: string }> = [
    { argv: ['org', 'create', 'acme'], method: 'POST', url: '/admin/organizations', body: { id: 'acme' }, status: 409, message: 'Organization "acme" already exists.', cli: 'organization "acme" already exists' },
    { argv: ['balance', 'show', 'nope'], method: 'GET', url: '/admin/organizations/nope/balance', status: 404, message: 'Unknown organization "nope".', cli: 'unknown organization "nope"' },
    { argv: ['balance', 'topup', 'nope', '1'], method: 'POST', url: '/admin/organizations/nope/topup', body: { amount: '1' }, status: 404, message: 'Unknown organization "nope".', cli: 'unknown organization "nope"' },
    { argv: ['project', 'create', 'web', '--org', 'acme'], method: 'POST', url: '/admin/projects', body: { id: 'web', organization: 'acme' }, status: 409, message: 'Project "web" already exists.', cli: 'project "web" already exists' },
    { argv: ['key', 'create', '--org', 'acme', '--id', 'k1'], method: 'POST', url: '/admin/keys', body: { organization: 'acme', id: 'k1' }, status: 409, message: 'Key "k1" already exists.', cli: 'key "k1" already exists' },
    { argv: ['key', 'revoke', 'nope'], method: 'POST', url: '/admin/keys/nope/revoke', status: 404, message: 'Unknown key "nope".', cli: 'unknown key "nope"' },
    { argv: ['key', 'revoke', 'k2'], method: 'POST', url: '/admin/keys/k2/revoke', status: 409, message: 'Key "k2" is already revoked.', cli: 'key "k2" is already revoked' },
    { argv: ['balance', 'adjust', 'nope', '-1', '--reason', 'r'], method: 'POST', url: '/admin/organizations/nope/adjustments', body: { amount: '-1', reason: 'r' }, status: 404,
      message: 'Unknown organization "nope".', cli: 'unknown organization "nope"' },
    { argv: ['balance', 'refund', 'acme', '1', '--reason', 'r', '--trace', 'nope'], method: 'POST', url: '/admin/organizations/acme/refunds', body: { amount: '1', reason: 'r', traceId: 'nope' },
      status: 404, message: 'No usage record with trace id "nope" for organization "acme".', cli: 'no usage record with trace id "nope" for organization "acme"' },
    { argv: ['holds', 'release', 'h1'], method: 'DELETE', url: '/admin/reservations/h1', status: 409, message: ERRORS.GW_ERR_HOLDS_NOT_STORED.message, cli: ERRORS.GW_ERR_HOLDS_NOT_STORED.message },
  ]
  for (const c of cases) {
    const name = c.argv.join(' ')
    const r = await adminCall(admin, c.method, c.url, c.body)
    t.equal(r.status, c.status, `${name}: API status`)
    t.equal(r.body?.error?.code, c.status, `${name}: API error.code`)
    t.equal(r.body?.error?.message, c.message, `${name}: API message`)
    t.same(await cli(...c.argv), { code: 1, out: '', err: `admin: ${c.cli}\n` }, `${name}: CLI`)
  }
})

t.test('the service throws table errors, nothing else', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  const service = new AdminService(ledger)
  const balances = new BalanceService(ledger)
  await service.createOrganization('acme')
  const refusals: Array<[() => Promise<unknown>, keyof typeof ERRORS]> = [
    [() => service.createOrganization('acme'), 'GW_ERR_ORGANIZATION_EXISTS'],
    [() => service.balance('nope'), 'GW_ERR_ORGANIZATION_UNKNOWN'],
    [() => balances.topUp('nope', 1, 'a'), 'GW_ERR_ORGANIZATION_UNKNOWN'],
    [() => balances.topUp('acme', 0, 'a'), 'GW_ERR_BAD_REQUEST'],
    [() => balances.topUp('acme', 2 ** 53, 'a'), 'GW_ERR_BAD_REQUEST'],
    [() => balances.topUp('acme', 2 ** 53 - 1, 'a').then(() => balances.topUp('acme', 1, 'a')), 'GW_ERR_BAD_REQUEST'],
    [() => balances.adjust('acme', 0, 'r', 'a'), 'GW_ERR_BAD_REQUEST'],
    [() => balances.adjust('acme', -1, '  ', 'a'), 'GW_ERR_BAD_REQUEST'],
    [() => balances.refund('acme', -1, 'r', 'a'), 'GW_ERR_BAD_REQUEST'],
    [() => balances.refund('acme', 1, 'r', 'a', 'nope'), 'GW_ERR_USAGE_UNKNOWN'],
    [() => service.createProject('web', 'nope'), 'GW_ERR_ORGANIZATION_UNKNOWN'],
    [() => service.createKey({ organization: 'acme', project: 'nope' }, { knownProject: true }), 'GW_ERR_PROJECT_UNKNOWN'],
    [() => service.revokeKey('nope'), 'GW_ERR_KEY_UNKNOWN'],
    [() => service.setPrice('m', { input: 0.0000001, output: 1 }), 'GW_ERR_BAD_REQUEST'],
    [() => service.price('m'), 'GW_ERR_PRICE_UNKNOWN'],
    [() => service.releaseHold('h1'), 'GW_ERR_HOLDS_NOT_STORED'],
  ]
  for (const [run, code] of refusals) {
    const err = await run().then(() => undefined, (e: unknown) => e)
    t.ok(isGatewayError(err) && err.code === code, `${code}: ${(err as Error | undefined)?.message}`)
  }
  t.equal((await service.balance('acme')).balance, '9007199254.740991', 'refused changes changed nothing')
  t.equal((await ledger.listJournal({ organization: 'acme', limit: 10 })).length, 1, 'one journal row: the top-up that fitted')
})
