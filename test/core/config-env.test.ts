// ${VAR} values typed by their schema, and config errors that name the file and the path inside it.
import t from 'tap'
import { writeFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { loadConfig } from '../../core/config/config.ts'
import { buildApp } from '../../core/http/app.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { builtinPlugins } from '../../plugins/index.ts'
import { builtinProviders, translators } from '../../providers/index.ts'

const dir = mkdtempSync(join(tmpdir(), 'gw-config-env-'))
function file (name: string, text: string): string {
  const p = join(dir, name)
  writeFileSync(p, text)
  return p
}

/** Loads a YAML text as GATEWAY_CONFIG with `env`, builds the app (never listens), returns it. */
async function build (name: string, text: string, env: Record<string, string> = {}) {
  const p = file(name, text)
  const { config } = loadConfig({ GATEWAY_CONFIG: p, ...env })
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  try {
    const app = await buildApp(config, { plugins: builtinPlugins, providers: builtinProviders, translators, ledger, logger: pino({ level: 'silent' }) })
    app.addHook('onClose', () => ledger.close())
    return app
  } catch (err) {
    await ledger.close()
    throw err
  }
}

t.test('${VAR} fills integers and booleans where the envelope schema wants them', async t => {
  const p = file('typed.yaml', [
    'server:',
    '  port: ${GW_PORT}',
    '  exemptProbesFromPlugins: ${EXEMPT}',
    '  host: ${GW_HOST}',
    '  maxJsonDepth: ${DEPTH:-64}',
    'stores:',
    '  kv: { prefix: "${PREFIX}" }',
    'models:',
    '  - id: v/m',
    '    price:',
    '      input: ${PRICE_IN}',
    '      output: 2',
    '    deployments: [{ provider: e, weight: "${W}" }]',
    'providers: [{ name: e, adapter: echo }]',
  ].join('\n'))
  const { config } = loadConfig({ GATEWAY_CONFIG: p, GW_PORT: '9123', EXEMPT: 'false', GW_HOST: '0.0.0.0', PREFIX: '123', PRICE_IN: '0.25', W: '3' })
  t.equal(config.server.port, 9123)
  t.equal(config.server.exemptProbesFromPlugins, false)
  t.equal(config.server.maxJsonDepth, 64, 'a fallback is typed too')
  t.equal(config.server.host, '0.0.0.0', 'a string stays a string')
  t.equal(config.stores.kv.prefix, '123', 'digits stay a string where the schema wants a string')
  t.equal(config.models[0].price!.input, 0.25)
  t.equal(config.models[0].deployments[0].weight, 3)
})

t.test('only substituted values are coerced; a value that does not parse names its path', async t => {
  const literal = file('literal.yaml', 'server:\n  port: "8080"\n')
  t.throws(() => loadConfig({ GATEWAY_CONFIG: literal }), { code: 'GW_ERR_CONFIG_INVALID', message: `Invalid config in ${literal} at /server/port: must be integer` })
  const bad = file('bad-env.yaml', 'server:\n  port: ${GW_PORT}\n')
  t.throws(() => loadConfig({ GATEWAY_CONFIG: bad, GW_PORT: '80eighty' }), { message: `Invalid config in ${bad} at /server/port: must be integer` })
  t.throws(() => loadConfig({ GATEWAY_CONFIG: bad, GW_PORT: '8.5' }), { message: /at \/server\/port: must be integer/ })
  const flag = file('bad-flag.yaml', 'server:\n  exemptProbesFromPlugins: ${FLAG}\n')
  t.throws(() => loadConfig({ GATEWAY_CONFIG: flag, FLAG: 'yes' }), { message: `Invalid config in ${flag} at /server/exemptProbesFromPlugins: must be boolean` })
  const mixed = file('mixed.yaml', 'server:\n  port: "${A}${B}"\n')
  t.equal(loadConfig({ GATEWAY_CONFIG: mixed, A: '80', B: '81' }).config.server.port, 8081, 'several references in one value: the result is typed')
})

t.test('${VAR} fills plugin and adapter configs by their own schemas', async t => {
  const app = await build('plugins.yaml', [
    'providers: [{ name: e, adapter: echo, config: { chunkDelayMs: "${DELAY}", protocol: "${PROTO}" } }]',
    'models: [{ id: v/m, deployments: [{ provider: e }] }]',
    'pipeline:',
    '  - plugin: ip-limit',
    '    config:',
    '      limit: ${IP_LIMIT}',
    '      windowMs: ${WINDOW}',
  ].join('\n'), { DELAY: '7', PROTO: 'chat', IP_LIMIT: '3', WINDOW: '60000' })
  t.teardown(() => app.close())
  const statuses: number[] = []
  for (let i = 0; i < 4; i++) statuses.push((await app.inject({ url: '/v1/models' })).statusCode)
  t.same(statuses, [200, 200, 200, 429], 'the IP limit is the integer 3 from the environment')
  await t.rejects(build('plugins-bad.yaml', 'pipeline:\n  - plugin: ip-limit\n    config: { limit: "3" }\n'),
    { code: 'GW_ERR_PLUGIN_CONFIG_INVALID', message: /in .*plugins-bad\.yaml at \/pipeline\/0\/config\/limit: must be integer/ }, 'a literal string stays an error')
})

t.test('every config error names the file and the path', async t => {
  const yaml = file('syntax.yaml', 'server:\n  port: 8080\n   host: x\n')
  t.throws(() => loadConfig({ GATEWAY_CONFIG: yaml }), { code: 'GW_ERR_CONFIG_INVALID', message: new RegExp(`^Invalid config in ${yaml} at line \\d+, column \\d+: \\S`) })
  const env = file('env.yaml', 'providers:\n  - name: p\n    adapter: echo\n    config: { apiKey: "${NOPE}" }\n')
  t.throws(() => loadConfig({ GATEWAY_CONFIG: env }), { code: 'GW_ERR_CONFIG_ENV_MISSING', message: `Config file ${env} at /providers/0/config/apiKey refers to environment variable \${NOPE}, which is not set` })
  await t.rejects(build('plugin.yaml', 'pipeline:\n  - plugin: auth\n  - plugin: no-such\n'),
    { code: 'GW_ERR_PLUGIN_UNKNOWN', message: new RegExp(`^Unknown plugin "no-such" in ${join(dir, 'plugin.yaml')} at /pipeline/1/plugin; known plugins: `) })
  await t.rejects(build('plugin-config.yaml', 'pipeline:\n  - plugin: ip-limit\n    config: { limit: 0 }\n'),
    { code: 'GW_ERR_PLUGIN_CONFIG_INVALID', message: `Invalid config for plugin "ip-limit" in ${join(dir, 'plugin-config.yaml')} at /pipeline/0/config/limit: must be >= 1` })
  await t.rejects(build('adapter.yaml', 'providers:\n  - { name: a, adapter: echo }\n  - { name: b, adapter: nope }\n'),
    { code: 'GW_ERR_PROVIDER_UNKNOWN', message: new RegExp(`^Unknown provider adapter "nope" in ${join(dir, 'adapter.yaml')} at /providers/1/adapter`) })
  await t.rejects(build('adapter-config.yaml', 'providers:\n  - { name: a, adapter: echo, config: { latencyMs: -1 } }\n'),
    { code: 'GW_ERR_PROVIDER_CONFIG_INVALID', message: `Invalid config for provider "a" in ${join(dir, 'adapter-config.yaml')} at /providers/0/config/latencyMs: must be >= 0` })
  await t.rejects(build('model.yaml', 'providers: [{ name: a, adapter: echo }]\nmodels:\n  - { id: v/m, deployments: [{ provider: a }, { provider: b }] }\n'),
    { code: 'GW_ERR_MODEL_CONFIG_INVALID', message: `Invalid model "v/m" in ${join(dir, 'model.yaml')} at /models/0/deployments/1/provider: names unknown provider "b"` })
  await t.rejects(build('alias.yaml', 'aliases: { short: v/none }\n'),
    { code: 'GW_ERR_MODEL_CONFIG_INVALID', message: `Invalid model "short" in ${join(dir, 'alias.yaml')} at /aliases/short: points to unknown model "v/none"` })
  // An alias is one JSON Pointer segment: its `~` and `/` escaped.
  await t.rejects(build('alias-escaped.yaml', 'aliases: { "team/m~1": v/none }\n'),
    { code: 'GW_ERR_MODEL_CONFIG_INVALID', message: `Invalid model "team/m~1" in ${join(dir, 'alias-escaped.yaml')} at /aliases/team~1m~01: points to unknown model "v/none"` })
})
