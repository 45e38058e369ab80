// auth without promises: a config key and a cached ledger key answer synchronously (fake context, in-memory SQLite ledger).
import t, { type Test } from 'tap'
import { fakeContext, pluginDeps, memoryLedger } from '../../../testing.ts'
import auth from '../../../plugins/auth/index.ts'
import { hashKey } from '../../../core/ledger/keys.ts'

const CONFIG_KEY = 'sk-gw-config-key-0001'
const LEDGER_KEY = 'sk-gw-ledger-key-0001'

async function setup (t: Test, extra: Record<string, unknown> = {}) {
  const ledger = await memoryLedger()
  t.teardown(() => ledger.close())
  await ledger.createOrganization('acme')
  await ledger.createKey({ id: 'lk-1', hash: hashKey(LEDGER_KEY), prefix: 'sk-gw-ledg', organization: 'acme' })
  const config = auth.prepareConfig!({ keys: [{ key: CONFIG_KEY, id: 'ck-1', organization: 'acme' }], ledger: true, ledgerCacheMs: 60_000, acceptXApiKey: true, ...extra } as Parameters<NonNullable<typeof auth.prepareConfig>>[0])
  const hooks = await auth.create(config as Parameters<typeof auth.create>[0], pluginDeps(auth, { ledger }))
  const ctxFor = (key: string) => fakeContext({ headers: { authorization: `Bearer ${key}` } })
  return { hooks, ledger, ctxFor }
}

t.test('auth – a config key and a cached ledger key authenticate without a promise; only a ledger read needs one', async t => {
  const { hooks, ctxFor } = await setup(t)
  const c = ctxFor(CONFIG_KEY)
  t.equal(hooks.onRequest!(c, undefined), undefined, 'config key: no promise')
  t.equal(c.principal?.keyId, 'ck-1')
  const first = ctxFor(LEDGER_KEY)
  const pending = hooks.onRequest!(first, undefined)
  t.type(pending?.then, 'function', 'the first use of a ledger key reads the ledger')
  await pending
  t.equal(first.principal?.keyId, 'lk-1')
  const again = ctxFor(LEDGER_KEY)
  t.equal(hooks.onRequest!(again, undefined), undefined, 'cached: no promise')
  t.equal(again.principal?.keyId, 'lk-1')
  const unknown = 'sk-gw-nobody-0000000001'
  await t.rejects(async () => hooks.onRequest!(ctxFor(unknown), undefined), { code: 'GW_ERR_AUTH_INVALID_KEY' })
  t.throws(() => hooks.onRequest!(ctxFor(unknown), undefined), { code: 'GW_ERR_AUTH_INVALID_KEY' }, 'an unknown key is cached too: refused at once')
})

t.test('auth – a revoked ledger key is refused once the cache entry expires; ledgerCacheMs 0 reads the ledger every time', async t => {
  const { hooks, ledger, ctxFor } = await setup(t, { ledgerCacheMs: 0 })
  const p = hooks.onRequest!(ctxFor(LEDGER_KEY), undefined)
  t.type(p?.then, 'function', 'no cache: a ledger read')
  await p
  await ledger.revokeKey('lk-1')
  await t.rejects(async () => hooks.onRequest!(ctxFor(LEDGER_KEY), undefined), { code: 'GW_ERR_AUTH_INVALID_KEY' }, 'revoked at once without a cache')
})

t.test('auth – the Authorization header: Bearer in any case, spaces or tabs, then one token', async t => {
  const { hooks } = await setup(t)
  const withHeader = (authorization: string) => fakeContext({ headers: { authorization } })
  for (const h of [`Bearer ${CONFIG_KEY}`, `bearer ${CONFIG_KEY}`, `BEARER\t${CONFIG_KEY}`, `Bearer  \t ${CONFIG_KEY}  `, `Bearer ${CONFIG_KEY}\r\n`]) {
    const ctx = withHeader(h)
    hooks.onRequest!(ctx, undefined)
    t.equal(ctx.principal?.keyId, 'ck-1', JSON.stringify(h))
  }
  for (const h of ['Bearer', 'Bearer ', `Bearer${CONFIG_KEY}`, `Basic ${CONFIG_KEY}`, `Bearer ${CONFIG_KEY} extra`, `Bearerx ${CONFIG_KEY}`, `Bearer\n${CONFIG_KEY}`]) {
    t.throws(() => hooks.onRequest!(withHeader(h), undefined), { code: 'GW_ERR_AUTH_MISSING_KEY' }, JSON.stringify(h))
  }
})
