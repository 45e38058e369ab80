import t from 'tap'
import { createHash } from 'node:crypto'
import { writeFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig, buildConfig, substituteEnv } from '../../core/config/config.ts'

const dir = mkdtempSync(join(tmpdir(), 'gw-config-'))
function file (name: string, text: string): string {
  const p = join(dir, name)
  writeFileSync(p, text)
  return p
}

t.test('config – embedded default when GATEWAY_CONFIG is unset', async t => {
  const { config, demoKey } = loadConfig({})
  t.equal(config.source, 'embedded default')
  t.match(demoKey, /^sk-gw-/)
  t.same(config.models.map(m => m.id), ['echo/echo-1', 'echo/echo-text', 'msgvendor/echo-1'])
  t.equal(config.server.port, 8080)
  t.equal(config.server.bodyLimitBytes, 67108864)
})

t.test('config – the embedded default serves the admin API on loopback with a generated admin key; ADMIN_PORT moves it', async t => {
  const { config, adminKey } = loadConfig({})
  t.match(adminKey, /^gw-admin-[\w-]{32}$/)
  t.notOk(config.pipeline.some(e => JSON.stringify(e).includes(adminKey!)), 'the admin key is no client key')
  t.match(config.admin, { host: '127.0.0.1', port: 8081, keys: [{ id: 'console', hash: createHash('sha256').update(adminKey!).digest('hex'), revoked: false }] })
  t.equal(config.admin!.keys[0]!.key, undefined, 'held as its hash only')
  t.not(loadConfig({}).adminKey, adminKey, 'a new key each start')
  t.equal(loadConfig({ GATEWAY_ADMIN_KEY: 'adm-fixed-0123456789' }).adminKey, 'adm-fixed-0123456789', 'GATEWAY_ADMIN_KEY fixes it')
  t.equal(loadConfig({ ADMIN_PORT: '0' }).config.admin?.port, 0)
  t.equal(loadConfig({ ADMIN_PORT: '9191' }).config.admin?.port, 9191)
  t.throws(() => loadConfig({ ADMIN_PORT: 'x' }), { message: /ADMIN_PORT.*whole number/ })
  t.throws(() => loadConfig({ ADMIN_PORT: '70000' }), { message: /\/admin\/port/ })
  t.throws(() => loadConfig({ GATEWAY_ADMIN_KEY: 'short' }), { message: /\/admin\/keys\/0\/key/ }, 'an admin key of under 16 characters is refused')
  const withAdmin = file('admin.yaml', 'admin:\n  port: 9000\n  keys: [{ id: ops, key: adm-0123456789abcdef }]\n')
  t.equal(loadConfig({ GATEWAY_CONFIG: withAdmin, ADMIN_PORT: '7002' }).config.admin?.port, 7002, 'over a file\'s admin.port too')
  const noAdmin = file('no-admin.yaml', '{}')
  const loaded = loadConfig({ GATEWAY_CONFIG: noAdmin, ADMIN_PORT: '7002' })
  t.equal(loaded.config.admin, undefined, 'no admin block: ADMIN_PORT adds none')
  t.equal(loaded.adminKey, undefined)
})

t.test('config – GATEWAY_DEMO_KEY fixes the demo key', async t => {
  const { demoKey } = loadConfig({ GATEWAY_DEMO_KEY: 'sk-gw-fixed' })
  t.equal(demoKey, 'sk-gw-fixed')
})

t.test('config – PORT, HOST and the body limit variable override the file', async t => {
  const p = file('a.yaml', 'server:\n  port: 9000\npipeline:\n  - plugin: size-limit\n')
  const { config } = loadConfig({ GATEWAY_CONFIG: p, PORT: '7001', HOST: '0.0.0.0', GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES: '1000' })
  t.equal(config.server.port, 7001)
  t.equal(config.server.host, '0.0.0.0')
  t.equal(config.server.bodyLimitBytes, 1000)
  t.same(config.pipeline[0].config, { maxBytes: 1000 })
})

t.test('config – ${ENV} and ${ENV:-fallback} are replaced; a missing variable names the file', async t => {
  t.same(substituteEnv({ a: 'x-${A}-y', b: ['${B:-dflt}'] }, { A: '1' }, 'f'), { a: 'x-1-y', b: ['dflt'] })
  const p = file('env.json', JSON.stringify({ providers: [{ name: 'p', adapter: 'echo', config: { apiKey: '${NOPE}' } }] }))
  t.throws(() => loadConfig({ GATEWAY_CONFIG: p }), { code: 'GW_ERR_CONFIG_ENV_MISSING', message: new RegExp(`${p}.*NOPE`) })
})

t.test('config – a bad file stops start-up naming the file, the path and the problem', async t => {
  const bad = file('bad.yaml', 'server:\n  port: "eighty"\n')
  t.throws(() => loadConfig({ GATEWAY_CONFIG: bad }), { code: 'GW_ERR_CONFIG_INVALID', message: `Invalid config in ${bad} at /server/port: must be integer` })
  const unknown = file('unknown.yaml', 'serverr: {}\n')
  t.throws(() => loadConfig({ GATEWAY_CONFIG: unknown }), { message: /at \/: must NOT have additional properties \("serverr"\)/ })
  const syntax = file('syntax.json', '{"server": ')
  t.throws(() => loadConfig({ GATEWAY_CONFIG: syntax }), { code: 'GW_ERR_CONFIG_INVALID', message: new RegExp(syntax) })
  t.throws(() => loadConfig({ GATEWAY_CONFIG: join(dir, 'missing.yaml') }), { code: 'GW_ERR_CONFIG_READ' })
  t.throws(() => loadConfig({ GATEWAY_CONFIG: file('port.yaml', '{}'), PORT: 'x' }), { message: /PORT.*whole number/ })
  t.throws(() => buildConfig([1, 2], 'arr', dir, {}), { message: /must be an object/ })
})

t.test('config – defaults are filled in for models', async t => {
  const config = buildConfig({ providers: [{ name: 'e', adapter: 'echo' }], models: [{ id: 'a/b', deployments: [{ provider: 'e' }] }] }, 'x', dir, {})
  t.equal(config.models[0].context_length, 128000)
  t.same(config.models[0].input_modalities, ['text'])
  t.equal(config.models[0].deployments[0].priority, 0)
})

t.test('config – circuit thresholds: defaults at the top level, optional overrides per provider and per model', async t => {
  const plain = buildConfig({}, 'c', dir, {})
  t.same(plain.circuit, { failureThreshold: 5, coolDownMs: 30000, trialTimeoutMs: 30000, ttfbMs: 60000 })
  const doc = {
    circuit: { coolDownMs: 1000 },
    providers: [{ name: 'p', adapter: 'echo', circuit: { failureThreshold: 2 } }],
    models: [{ id: 'v/m', circuit: { trialTimeoutMs: 500 }, deployments: [{ provider: 'p' }] }],
  }
  const c = buildConfig(doc, 'c', dir, {})
  t.same(c.circuit, { failureThreshold: 5, coolDownMs: 1000, trialTimeoutMs: 30000, ttfbMs: 60000 })
  t.same(c.providers[0].circuit, { failureThreshold: 2 }, 'no defaults filled in an override: absent keys fall through')
  t.same(c.models[0].circuit, { trialTimeoutMs: 500 })
  t.throws(() => buildConfig({ ...doc, providers: [{ name: 'p', adapter: 'echo', circuit: { failureThreshold: 0 } }] }, 'c', dir, {}),
    { code: 'GW_ERR_CONFIG_INVALID', message: /at \/providers\/0\/circuit\/failureThreshold: must be >= 1/ })
  t.throws(() => buildConfig({ ...doc, circuit: { trialMs: 5 } }, 'c', dir, {}), { code: 'GW_ERR_CONFIG_INVALID', message: /at \/circuit: must NOT have additional properties/ })
  t.throws(() => buildConfig({ models: [{ id: 'v/m', circuit: { coolDownMs: -1 }, deployments: [{ provider: 'p' }] }] }, 'c', dir, {}),
    { code: 'GW_ERR_CONFIG_INVALID', message: /at \/models\/0\/circuit\/coolDownMs/ })
})

t.test('config – metrics served by the admin listener need an admin block', async t => {
  const p = file('metrics-admin.yaml', 'metrics:\n  listen: admin\n')
  t.throws(() => loadConfig({ GATEWAY_CONFIG: p }), {
    code: 'GW_ERR_CONFIG_INVALID',
    message: `Invalid config in ${p} at /metrics/listen: "admin" serves the metrics on the admin listener, which needs an admin block (or use "main" or "off")`,
  })
  const ok = file('metrics-admin-ok.yaml', 'metrics:\n  listen: admin\nadmin:\n  keys: [{ id: ops, key: admin-key-0123456789abcdef }]\n')
  t.equal(loadConfig({ GATEWAY_CONFIG: ok }).config.metrics.listen, 'admin')
})

t.test('config – server.trustedProxies entries are addresses or CIDRs', async t => {
  const p = file('proxies.yaml', 'server:\n  trustedProxies: [10.0.0.0/8, "::1", 10.0.0.0/33]\n')
  t.throws(() => loadConfig({ GATEWAY_CONFIG: p }), { code: 'GW_ERR_CONFIG_INVALID', message: `Invalid config in ${p} at /server/trustedProxies/2: bad prefix length in "10.0.0.0/33"` })
  const q = file('proxies-name.yaml', 'server:\n  trustedProxies: [lb.internal]\n')
  t.throws(() => loadConfig({ GATEWAY_CONFIG: q }), { message: `Invalid config in ${q} at /server/trustedProxies/0: not an IP address or CIDR: "lb.internal"` })
  t.same(loadConfig({ GATEWAY_CONFIG: file('proxies-ok.yaml', 'server:\n  trustedProxies: [10.0.0.0/8, "fd00::/8"]\n') }).config.server.trustedProxies, ['10.0.0.0/8', 'fd00::/8'])
})

t.test('a NUL character anywhere in the config is refused at load, with its path', async t => {
  // The YAML escape \0 is how one gets into a config file; a model id holding one would fail
  // every charge on PostgreSQL (text cannot hold a NUL).
  const yaml = file('nul.yaml', 'providers:\n  - { name: p, adapter: echo }\nmodels:\n  - { id: "v/m\\0x", deployments: [{ provider: p }] }\n')
  t.throws(() => loadConfig({ GATEWAY_CONFIG: yaml }), { code: 'GW_ERR_CONFIG_INVALID', message: `Invalid config in ${yaml} at /models/0/id: must not contain a NUL character` })
  const doc = { providers: [{ name: 'p', adapter: 'echo' }], models: [{ id: 'v/m', deployments: [{ provider: 'p' }] }] }
  t.ok(buildConfig(doc, 'c', dir, {}), 'the same config without it loads')
  t.throws(() => buildConfig({ ...doc, pipeline: [{ plugin: 'auth', config: { keys: [{ key: 'sk-1', organization: 'org\u0000a' }] } }] }, 'c', dir, {}),
    { code: 'GW_ERR_CONFIG_INVALID', message: /at \/pipeline\/0\/config\/keys\/0\/organization: must not contain a NUL character/ }, 'in a plugin\'s config too')
  t.throws(() => buildConfig({ ...doc, models: [{ ...doc.models[0], default_parameters: { 'a/\u0000': 1 } }] }, 'c', dir, {}),
    { code: 'GW_ERR_CONFIG_INVALID', message: 'Invalid config in c at /models/0/default_parameters/a~1\u0000: must not contain a NUL character' }, 'in a key, escaped as a JSON Pointer')
})
