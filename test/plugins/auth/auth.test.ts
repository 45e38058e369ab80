// auth hooks called directly: the test kit's fake context and deps, the gateway's in-memory SQLite
// ledger for keys made by the admin CLI. Through a listening gateway: test/plugins/guard.test.ts.
import t from 'tap'
import { fakeContext, pluginDeps, memoryLedger } from '../../../testing.ts'
import type { Ledger } from '../../../index.ts'
import auth from '../../../plugins/auth/index.ts'
import { generateKey, hashKey } from '../../../core/ledger/keys.ts'
import type { AuthConfigT } from '../../../plugins/auth/schema.ts'

const CONFIG_KEY = 'sk-gw-config-key-0001'

/** The plugin as a gateway makes it: defaults filled, prepareConfig run (plain keys hashed), create(). */
async function make (over: Partial<AuthConfigT> = {}, ledger?: Ledger) {
  const config = auth.prepareConfig!({
    keys: [{ key: CONFIG_KEY, id: 'key-cfg', name: 'ci', organization: 'acme', project: 'web', models: ['echo/echo-1'] }],
    ledger: false, ledgerCacheMs: 5000, acceptXApiKey: true, ...over,
  })
  const hooks = await auth.create(config, pluginDeps(auth, ledger ? { ledger } : {}))
  /** Runs onRequest with these headers; returns the context (the principal set) or rejects with the plugin's error. */
  const authenticate = async (headers: Record<string, string>) => {
    const ctx = fakeContext({ headers })
    await hooks.onRequest!(ctx, undefined)
    return ctx
  }
  return { config, hooks, authenticate }
}

t.test('auth – prepareConfig keeps only the hash of a plain key, and needs exactly one of key or hash', async t => {
  const { config } = await make()
  t.same(config.keys, [{ hash: hashKey(CONFIG_KEY), id: 'key-cfg', name: 'ci', organization: 'acme', project: 'web', models: ['echo/echo-1'] }])
  t.notOk(JSON.stringify(config).includes(CONFIG_KEY), 'the plain key is gone')
  t.throws(() => auth.prepareConfig!({ keys: [{ id: 'x' }], ledger: false, ledgerCacheMs: 0, acceptXApiKey: true }), /exactly one of "key" or "hash"/)
  t.throws(() => auth.prepareConfig!({ keys: [{ key: CONFIG_KEY, hash: hashKey(CONFIG_KEY) }], ledger: false, ledgerCacheMs: 0, acceptXApiKey: true }), /exactly one/)
})

t.test('auth – a config key sets the principal, synchronously (no promise per call)', async t => {
  const { hooks, authenticate } = await make()
  const ctx = fakeContext({ headers: { authorization: `Bearer ${CONFIG_KEY}` } })
  t.equal(hooks.onRequest!(ctx, undefined), undefined, 'no promise for a key from config')
  t.match(ctx.principal, { keyId: 'key-cfg', name: 'ci', organization: 'acme', project: 'web' })
  t.same([...ctx.principal!.models!], ['echo/echo-1'])
  t.ok(Object.isFrozen(ctx.principal), 'the principal is frozen')
  t.equal((await authenticate({ authorization: `bearer \t${CONFIG_KEY}  ` })).principal?.keyId, 'key-cfg', 'the scheme is case-insensitive, blanks around the key ignored')
  t.equal((await authenticate({ 'x-api-key': CONFIG_KEY })).principal?.keyId, 'key-cfg', 'x-api-key (Anthropic clients) is read too')
})

t.test('auth – missing, malformed and unknown keys are 401s', async t => {
  const { authenticate } = await make()
  await t.rejects(authenticate({}), { code: 'GW_ERR_AUTH_MISSING_KEY', statusCode: 401 })
  await t.rejects(authenticate({ authorization: `Basic ${CONFIG_KEY}` }), { code: 'GW_ERR_AUTH_MISSING_KEY' }, 'not a Bearer key')
  await t.rejects(authenticate({ authorization: 'Bearer ' }), { code: 'GW_ERR_AUTH_MISSING_KEY' })
  await t.rejects(authenticate({ 'x-api-key': '   ' }), { code: 'GW_ERR_AUTH_MISSING_KEY' }, 'a blank x-api-key')
  await t.rejects(authenticate({ authorization: 'Bearer sk-live-not-ours' }), { code: 'GW_ERR_AUTH_INVALID_KEY', statusCode: 401 }, 'another prefix')
  await t.rejects(authenticate({ authorization: 'Bearer sk-gw-unknown-key' }), { code: 'GW_ERR_AUTH_INVALID_KEY' }, 'unknown, and no ledger to ask')
})

t.test('auth – acceptXApiKey: false reads Authorization only', async t => {
  const { authenticate } = await make({ acceptXApiKey: false })
  await t.rejects(authenticate({ 'x-api-key': CONFIG_KEY }), { code: 'GW_ERR_AUTH_MISSING_KEY' })
  t.equal((await authenticate({ authorization: `Bearer ${CONFIG_KEY}` })).principal?.keyId, 'key-cfg')
})

t.test('auth – keys made in the ledger: found by hash, revoked ones refused, misses and hits cached', async t => {
  const ledger = await memoryLedger()
  t.teardown(() => ledger.close())
  await ledger.createOrganization('acme')
  const secret = generateKey()
  await ledger.createKey({ id: 'key-ledger', hash: hashKey(secret), prefix: secret.slice(0, 10), name: 'made by the CLI', organization: 'acme', models: ['m/a', 'm/b'] })

  // No cache: a revocation shows on the next call.
  const fresh = await make({ ledger: true, ledgerCacheMs: 0 }, ledger)
  const ctx = fakeContext({ headers: { authorization: `Bearer ${secret}` } })
  const pending = fresh.hooks.onRequest!(ctx, undefined)
  t.ok(pending instanceof Promise, 'a ledger lookup is asynchronous')
  await pending
  t.match(ctx.principal, { keyId: 'key-ledger', name: 'made by the CLI', organization: 'acme' })
  t.same([...ctx.principal!.models!], ['m/a', 'm/b'])
  t.equal((await fresh.authenticate({ authorization: `Bearer ${CONFIG_KEY}` })).principal?.keyId, 'key-cfg', 'config keys still work beside the ledger')
  await t.rejects(fresh.authenticate({ authorization: `Bearer ${generateKey()}` }), { code: 'GW_ERR_AUTH_INVALID_KEY' }, 'a key the ledger does not know')
  await ledger.revokeKey('key-ledger')
  await t.rejects(fresh.authenticate({ authorization: `Bearer ${secret}` }), { code: 'GW_ERR_AUTH_INVALID_KEY' }, 'revoked: refused at once without a cache')

  // With a cache, the answer the ledger gave is kept for ledgerCacheMs.
  const other = generateKey()
  await ledger.createKey({ id: 'key-cached', hash: hashKey(other), prefix: other.slice(0, 10), organization: 'acme' })
  const cached = await make({ ledger: true, ledgerCacheMs: 60_000 }, ledger)
  t.equal((await cached.authenticate({ authorization: `Bearer ${other}` })).principal?.keyId, 'key-cached')
  await ledger.revokeKey('key-cached')
  t.equal((await cached.authenticate({ authorization: `Bearer ${other}` })).principal?.keyId, 'key-cached', 'still accepted from the cache until it expires')
})

t.test('auth – a ledger that cannot be read is 503 (not ready), never a 401 for a valid key', async t => {
  const ledger = await memoryLedger()
  const { authenticate } = await make({ ledger: true, ledgerCacheMs: 0 }, ledger)
  await ledger.close()
  await t.rejects(authenticate({ authorization: `Bearer ${generateKey()}` }), { code: 'GW_ERR_NOT_READY', statusCode: 503 })
  t.equal((await authenticate({ authorization: `Bearer ${CONFIG_KEY}` })).principal?.keyId, 'key-cfg', 'config keys do not need the ledger')
})
