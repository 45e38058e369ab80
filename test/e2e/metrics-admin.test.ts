/**
 * The built server (dist/server.js) with `metrics.listen: admin`: /metrics is served by the admin
 * listener behind an admin key (none: 401, a wrong key: 401, a client key: 401, as a wrong one; a revoked admin
 * key: 403, an admin key: 200 with the gateway's metrics in Prometheus text format) and not by
 * the main listener.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { once } from 'node:events'
import { createHash } from 'node:crypto'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { until } from '../helpers/until.ts'

const SERVER = resolve('dist/server.js')
const CLIENT_KEY = 'sk-gw-metrics-client-0001'
const ADMIN_KEY = 'adm-metrics-0123456789abcdef'
const REVOKED = 'adm-revoked-0123456789abcdef'

const CONFIG = `
stores:
  ledger: { backend: sqlite, path: ./gw.db }
providers:
  - { name: echo, adapter: echo }
models:
  - { id: echo/echo-1, price: { input: 1, output: 2 }, deployments: [{ provider: echo }] }
pipeline:
  - plugin: auth
    config:
      keys: [{ key: ${CLIENT_KEY}, id: client, name: client, organization: demo }]
metrics:
  listen: admin
admin:
  host: 127.0.0.1
  port: 0
  keys:
    - { id: ops, key: "\${GW_ADMIN_KEY}" }
    - { id: old, hash: ${createHash('sha256').update(REVOKED).digest('hex')}, revoked: true }
`

t.test('metrics on the admin listener, behind an admin key', async t => {
  if (!existsSync(SERVER)) {
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: CI must run `npm run build` before `npm test`')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const cwd = mkdtempSync(join(tmpdir(), 'gw-metrics-admin-'))
  writeFileSync(join(cwd, 'gateway.yaml'), CONFIG)
  const child = spawn(process.execPath, [SERVER], {
    cwd,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', GATEWAY_CONFIG: join(cwd, 'gateway.yaml'), GW_ADMIN_KEY: ADMIN_KEY, GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  child.stdout!.on('data', d => { out += d })
  child.stderr!.on('data', d => { out += d })
  const lines = (): any[] => out.split('\n').flatMap(l => { try { return [JSON.parse(l)] } catch { return [] } })
  if (!await until(() => lines().some(l => l.msg === 'gateway listening'), 20_000)) {
    t.fail(`server did not start: ${out.slice(0, 500)}`)
    return
  }
  const main = lines().find(l => l.msg === 'gateway listening').address
  const admin = lines().find(l => l.msg === 'admin API listening').address

  const chat = await fetch(`${main}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'echo/echo-1', messages: [{ role: 'user', content: 'hello' }] }),
  })
  t.equal(chat.status, 200)
  await chat.text()

  const scrape = (key?: string) => fetch(`${admin}/metrics`, { headers: key ? { authorization: `Bearer ${key}` } : {} })
  const none = await scrape()
  t.equal(none.status, 401, 'no key')
  t.match(await none.json(), { error: { code: 401, message: /Missing admin key/ } })
  t.equal((await scrape('adm-not-a-key-0123456789abcdef')).status, 401, 'a key that is no key')
  const client = await scrape(CLIENT_KEY)
  t.equal(client.status, 401, 'a client key never works on the admin listener')
  t.match(await client.json(), { error: { code: 401, message: 'Invalid admin key.' } }, 'and is not told apart from a wrong key')
  t.equal((await scrape(REVOKED)).status, 403, 'a revoked admin key')

  const ok = await scrape(ADMIN_KEY)
  t.equal(ok.status, 200, 'an admin key')
  t.match(ok.headers.get('content-type'), /^text\/plain/)
  const families = parsePrometheusTextFormat(await ok.text())
  const requests = families.find(f => f.name === 'gw_requests_total')
  t.equal(requests?.metrics.find(m => m.labels?.route === 'chat' && m.labels?.status === '200')?.value, '1', 'the call answered is counted')
  t.ok(families.some(f => f.name === 'gw_config_info'), 'the config version is there')

  t.equal((await fetch(`${main}/metrics`)).status, 404, 'not on the main listener')
  const api = await (await fetch(`${admin}/admin/openapi.json`)).json()
  t.equal(api.paths['/metrics'], undefined, 'not in the admin API\'s OpenAPI document (Prometheus text, not JSON)')

  child.kill('SIGTERM')
  const [code] = await once(child, 'exit')
  t.equal(code, 0)
})
