// A gateway for bench/hooks-cost.mjs: auth only (so the hooks' share of the work is visible),
// optionally with a plugin whose response hooks do nothing. Prints its base URL on stdout.
// Usage: node hooks-gateway.mjs <dist dir> <mock port> <none|noop-hooks>
// The dist may be this build or an older one (to compare with a build from before response hooks):
// core grouped into folders (core/config/, core/http/) with server.ts handing buildApp the built-in
// lists, or the earlier flat core/ whose buildApp registered the built-ins itself.
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const [dist, mockPort, variant] = process.argv.slice(2)
const load = p => import(pathToFileURL(resolve(dist, p)).href)
const folders = existsSync(resolve(dist, 'core/config/config.js'))
const { buildConfig } = await load(folders ? 'core/config/config.js' : 'core/config.js')
const { buildApp } = await load(folders ? 'core/http/app.js' : 'core/app.js')
const { Type } = await import('@sinclair/typebox')

const noop = {
  name: 'noop-hooks',
  phase: 'admit',
  configSchema: Type.Object({}, { additionalProperties: false }),
  create: () => ({ onResponse () {}, onStreamEvent () {} }),
}
const extra = variant === 'noop-hooks' ? [noop] : []
const doc = {
  server: { host: '127.0.0.1' },
  logging: { level: 'warn' },
  stores: { kv: { backend: 'memory' }, ledger: { backend: 'sqlite', path: ':memory:' } },
  providers: [{ name: 'mock-chat', adapter: 'openai-compatible', config: { baseUrl: `http://127.0.0.1:${mockPort}/v1`, apiKey: 'sk-mock' } }],
  models: [{ id: 'bench/chat', price: { input: 1, output: 2 }, deployments: [{ provider: 'mock-chat', model: 'mock' }] }],
  pipeline: [
    { plugin: 'auth', config: { ledger: false, keys: [{ key: 'sk-gw-bench-key-0001', id: 'bench' }] } },
    ...extra.map(p => ({ plugin: p.name })),
  ],
}
let opts
if (folders) {
  const { builtinPlugins } = await load('plugins/index.js')
  const { builtinProviders, translators } = await load('providers/index.js')
  opts = { plugins: [...builtinPlugins, ...extra], providers: builtinProviders, translators }
} else {
  opts = { plugins: extra }
}
const app = await buildApp(buildConfig(doc, 'hooks bench', process.cwd(), {}), opts)
process.stdout.write(await app.listen({ host: '127.0.0.1', port: 0 }) + '\n')
