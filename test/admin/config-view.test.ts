/**
 * GET /admin/config names the config version serving and when it was loaded (and the package
 * version), follows a reload, and its OpenAPI schema declares those fields.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { openLedger } from '../../core/ledger/index.ts'
import { buildConfig } from '../../core/config/config.ts'
import { testDoc } from '../helpers/build-test-app.ts'
import { ADMIN_KEY, adminAuth, running } from '../helpers/admin.ts'

const PACKAGE_VERSION = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version

async function get (base: string, path: string): Promise<{ status: number, body: any }> {
  const r = await fetch(base + path, { headers: adminAuth() })
  return { status: r.status, body: await r.json() }
}

t.test('the config view names the version serving and its load time, across a reload', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  const { admin, app } = await running(t, ledger)
  const v1 = app.gateway.configVersion

  let r = await get(admin, '/admin/config')
  t.equal(r.status, 200)
  t.equal(r.body.version, PACKAGE_VERSION, 'the package version')
  t.equal(r.body.configVersion, v1, 'the config version serving')
  t.equal(r.body.loadedAt, new Date(app.gateway.configLoadedAt).toISOString(), 'when it was loaded, ISO 8601')
  t.equal(r.body.config.logging.level, 'silent')

  const doc = testDoc({ doc: { ...app.gateway.config.admin && { admin: structuredClone(app.gateway.config.admin) }, logging: { level: 'warn' } } })
  // The running config holds the admin key as its hash; the reloaded file names it in plain again.
  const reloadedKey = (doc.admin as { keys: Array<{ key?: string, hash?: string }> }).keys[0]!
  reloadedKey.key = '${ADMIN_KEY}'
  delete reloadedKey.hash
  const result = await app.reloadConfig(buildConfig(doc, 'test config', process.cwd(), { ADMIN_KEY }))
  t.not(result.configVersion, v1)
  r = await get(admin, '/admin/config')
  t.equal(r.body.configVersion, result.configVersion, 'the version a reload made serve')
  t.equal(r.body.loadedAt, new Date(app.gateway.configLoadedAt).toISOString(), 'and when it was loaded')
  t.equal(r.body.config.logging.level, 'warn', 'and its settings')
  t.equal(r.body.version, PACKAGE_VERSION)

  const api = await (await fetch(admin + '/admin/openapi.json')).json()
  const schema = api.paths['/admin/config'].get.responses['200'].content['application/json'].schema
  t.match(schema.properties, { version: { type: 'string' }, configVersion: { type: 'string' }, loadedAt: { type: 'string', format: 'date-time' } }, 'documented in the OpenAPI document')
  t.ok(['version', 'configVersion', 'loadedAt'].every(k => schema.required.includes(k)))
})
