// Plain API keys from the config are dropped once hashed (issue 14 item 8b): README promises that
// only hashes are kept in memory.
import t from 'tap'
import { buildTestApp, listen, auth, TEST_KEY, LIMITED_KEY, NO_ORG_KEY } from '../../helpers/build-test-app.ts'
import { hashKey } from '../../../core/ledger/keys.ts'

/** Every string reachable from `root` through own properties, enumerable or not. */
function strings (root: unknown): string[] {
  const out: string[] = []
  const seen = new Set<unknown>()
  const walk = (v: unknown): void => {
    if (typeof v === 'string') { out.push(v); return }
    if (v === null || typeof v !== 'object' || seen.has(v)) return
    seen.add(v)
    if (v instanceof Map || v instanceof Set) { for (const x of v.entries()) walk(x); return }
    for (const k of Reflect.ownKeys(v)) {
      if (typeof k === 'string') out.push(k)
      walk((v as Record<string | symbol, unknown>)[k])
    }
  }
  walk(root)
  return out
}

t.test('auth – after buildApp no plain key is reachable from the config; the keys still work', async t => {
  const app = await buildTestApp()
  t.teardown(() => app.close())
  const url = await listen(app)
  const all = strings(app.gateway.config)
  for (const key of [TEST_KEY, LIMITED_KEY, NO_ORG_KEY]) {
    t.notOk(all.some(s => s.includes(key)), `${key.slice(0, 12)}… is not in the config`)
    t.ok(all.includes(hashKey(key)), 'its hash is')
  }
  t.notOk(strings(app.gateway.pipeline).some(s => s.includes(TEST_KEY)), 'nor in the plugin instances')
  const res = await fetch(`${url}/v1/models`, { headers: auth() })
  t.equal(res.status, 200, 'the plain key still authenticates')
  t.equal((await fetch(`${url}/v1/models`, { headers: auth(LIMITED_KEY) })).status, 200)
  t.equal((await fetch(`${url}/v1/models`, { headers: auth('sk-gw-not-a-key') })).status, 401)
  await t.rejects(buildTestApp({ pipeline: [{ plugin: 'auth', config: { keys: [{ key: TEST_KEY, hash: hashKey(TEST_KEY) }] } }] }), /exactly one of "key" or "hash"/)
})
