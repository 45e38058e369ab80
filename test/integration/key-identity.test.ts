/**
 * @module test/integration/key-identity – per-key state is the key's organization and id together, through a listening gateway with its
 * admin listener, on SQLite and PostgreSQL ledgers: a ledger key created (admin API) with the id of a
 * config key of another organization shares neither idempotency claims nor per-key quota windows.
 */
import t, { type Test } from 'tap'
import { startAdmin } from '../../admin/app.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { ADMIN_KEY, adminAuth, adminCall } from '../helpers/admin.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'

const chat = { model: 'echo/echo-1', max_tokens: 20, messages: [{ role: 'user', content: 'hello' }] }
const PER_KEY = 5

async function suite (t: Test, ledger: Ledger): Promise<void> {
  const app = await buildTestApp({
    ledger,
    pipeline: [AUTH_ENTRY, { plugin: 'idempotency' }, { plugin: 'quota', config: { limits: [{ scope: 'key', window: 'day', requests: PER_KEY }] } }],
    doc: { admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }] } },
    env: { ADMIN_KEY },
  })
  t.teardown(() => app.close())
  const admin = (await startAdmin(app))!.address
  const gateway = await listen(app)
  t.equal((await adminCall(admin, 'POST', '/admin/organizations', { id: 'other-org' }, adminAuth())).status, 201)
  // AUTH_ENTRY's config key TEST_KEY has the id key-test in org-test.
  const created = await adminCall(admin, 'POST', '/admin/keys', { organization: 'other-org', id: 'key-test' }, adminAuth())
  t.equal(created.status, 201, 'a ledger key may take the id of a config key of another organization')
  const ledgerKey: string = created.body.secret
  const post = async (key: string, idem?: string): Promise<number> => (await fetch(`${gateway}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...auth(key), 'content-type': 'application/json', ...(idem ? { 'idempotency-key': idem } : {}) },
    body: JSON.stringify(chat),
  })).status

  t.equal(await post(auth().authorization.slice(7), 'pay-once'), 200, 'the config key claims "pay-once"')
  t.equal(await post(ledgerKey, 'pay-once'), 200, 'the ledger key with the same id has claims of its own')
  t.equal(await post(ledgerKey, 'pay-once'), 409, 'and its own claim holds')

  // One call each already counted; the rest of each key's window, with twice as many in flight.
  const both = await Promise.all(Array.from({ length: 4 * PER_KEY }, (_, i) => post(i % 2 ? ledgerKey : auth().authorization.slice(7))))
  const served = (odd: number) => both.filter((s, i) => i % 2 === odd && s === 200).length
  t.equal(served(0), PER_KEY - 1, 'the config key gets the rest of its own window')
  t.equal(served(1), PER_KEY - 1, 'the ledger key gets the rest of its own window')
  t.ok(both.every(s => s === 200 || s === 429), 'the others 429')
}

t.test('SQLite ledger', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  await suite(t, ledger)
})

t.test('PostgreSQL ledger', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  await suite(t, await pgLedgers(t, url, 'key_identity')(t))
})
