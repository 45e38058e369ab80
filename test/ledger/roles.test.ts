// Ledger roles: a plugin gets views of the roles it declares, each with that role's operations
// only (administration is never reachable, even by a cast), over the real in-memory SQLite ledger,
// through a listening gateway; an unknown role stops start-up.
import t from 'tap'
import { definePlugin, Type, type LedgerRolesOf } from '../../index.ts'
import { memoryLedger } from '../../testing.ts'
import { ledgerRoles, LEDGER_ROLES } from '../../core/ledger/roles.ts'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'

const ADMIN = ['createOrganization', 'createProject', 'createKey', 'revokeKey', 'updateKey', 'rotateKey', 'listKeys', 'topUp', 'postEntry', 'listJournal', 'verify', 'appendAudit', 'listAudit', 'setPrice', 'listPrices', 'listHolds', 'releaseHold', 'listKeyHolds', 'releaseKeyHold', 'listOrganizations', 'getOrganization', 'listProjects', 'migrate', 'close']

t.test('each view holds its role and nothing of administration', async t => {
  const ledger = await memoryLedger()
  t.teardown(() => ledger.close())
  const roles = ledgerRoles(ledger, LEDGER_ROLES)
  t.same(Object.keys(roles).sort(), ['keys', 'prices', 'usage', 'wallet'])
  t.same(Object.keys(roles.keys).sort(), ['findKeyByHash', 'ping', 'touchKeys'])
  t.same(Object.keys(roles.wallet.keyBudgets!).sort(), ['exhausted', 'release', 'reserve', 'resize'], 'key budgets: their four operations only')
  t.same(Object.keys(roles.prices).sort(), ['getPrice', 'ping'])
  t.same(Object.keys(roles.usage).sort(), ['listUsage', 'ping', 'queryUsage', 'summarizeUsage'])
  for (const view of Object.values(roles)) {
    for (const m of ADMIN) t.equal((view as unknown as Record<string, unknown>)[m], undefined, m)
    t.ok(Object.isFrozen(view), 'frozen')
  }
  // The wallet works on the same book: an account opened once, held, charged.
  const w = roles.wallet
  t.equal(await w.openAccount('acme', 'Acme', 1000), true, 'created and credited')
  t.equal(await w.openAccount('acme', 'Acme', 1000), false, 'exists: nothing credited again')
  t.same(await ledger.getBalance('acme'), { balance: 1000, reserved: 0 })
  t.type(w.inProcess?.reserve, 'function', 'SQLite: the in-process facet')
  t.equal(w.leaseHold, undefined, 'SQLite: no lease holds')
  const r = w.inProcess!.reserve('acme', 600)
  t.equal(await w.reserve('acme', 500), undefined, 'the async reserve sees the in-process hold')
  t.same(await w.getBalance('acme'), { balance: 1000, reserved: 600 })
  await w.release(r!)
  t.same(await w.getBalance('acme'), { balance: 1000, reserved: 0 })
  t.same(ledgerRoles(ledger, []), {}, 'no roles declared: nothing')
  t.throws(() => ledgerRoles(ledger, ['admin' as never]), /unknown ledger role "admin"/)
})

t.test('a plugin in a running gateway gets exactly the roles it declares', async t => {
  let seen: LedgerRolesOf<'keys' | 'prices'> | undefined
  const peek = definePlugin({
    name: 'role-peek',
    phase: 'admit',
    ledger: ['keys', 'prices'],
    configSchema: Type.Object({}),
    create (_config, deps) {
      seen = deps.ledger
      return { async onRequest () { if (await deps.ledger.prices.getPrice('echo/echo-1') !== undefined) throw new Error('no price was set') } }
    },
  })
  const app = await buildTestApp({ plugins: [peek], pipeline: [AUTH_ENTRY, { plugin: 'role-peek' }] })
  t.teardown(() => app.close())
  t.same(Object.keys(seen!).sort(), ['keys', 'prices'])
  t.equal((seen as unknown as Record<string, unknown>).wallet, undefined, 'no wallet')
  const url = await listen(app)
  const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ model: 'echo/echo-1', messages: [{ role: 'user', content: 'hi' }] }) })
  t.equal(res.status, 200, 'its hook read a price through its view')
})

t.test('an unknown role stops start-up', async t => {
  const bad = definePlugin({ name: 'role-bad', phase: 'admit', ledger: ['admin' as never], configSchema: Type.Object({}), create: () => ({}) })
  await t.rejects(buildTestApp({ plugins: [bad], pipeline: [AUTH_ENTRY, { plugin: 'role-bad' }] }), { code: 'GW_ERR_PLUGIN_INVALID', message: /ledger role "admin"/ })
})
