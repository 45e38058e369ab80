/**
 * @module test/docs/example-config – gateway.example.yaml, the annotated config README points newcomers
 * to, holds every built-in plugin and adapter and serves as written: the built gateway starts on it
 * (SQLite ledger in a temporary directory) and answers a call with the file's example key.
 */
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parse } from 'yaml'
import { builtinPlugins } from '../../plugins/index.ts'
import { builtinProviders } from '../../providers/index.ts'

const FILE = resolve('gateway.example.yaml')
const SERVER = resolve('dist/server.js')
const KEY = 'sk-gw-example-key-change-me'
const ADMIN = 'change-me-to-a-long-random-admin-key'

t.test('gateway.example.yaml names every built-in plugin and adapter', async t => {
  const doc = parse(readFileSync(FILE, 'utf8')) as { pipeline: Array<{ plugin: string }>, providers: Array<{ adapter: string }> }
  const plugins = new Set(doc.pipeline.map(p => p.plugin))
  for (const p of builtinPlugins) t.ok(plugins.has(p.name), `plugin ${p.name}`)
  const text = readFileSync(FILE, 'utf8')
  for (const a of builtinProviders) t.match(text, new RegExp(`adapter: ${a.name}\\b`), `adapter ${a.name}`)
  t.match(text, /backend: postgres/, 'the scale-out ledger is shown too')
})

t.test('model-gateway --check accepts gateway.example.yaml and deploy/gateway.yaml', async t => {
  if (!existsSync(SERVER)) { t.fail('dist/server.js is missing: run `npm run build` first (npm test does)'); return }
  for (const [file, env] of [[FILE, {}], [resolve('deploy/gateway.yaml'), { REDIS_URL: 'redis://redis:6379', DATABASE_URL: 'postgres://gw@db/gw', GATEWAY_ADMIN_KEY: ADMIN }]] as const) {
    const r = spawnSync(process.execPath, [SERVER, '--check', '--config', file], { encoding: 'utf8', env: { ...process.env, ...env, GATEWAY_CONFIG: '' } })
    t.equal(r.status, 0, `${file}: exit 0 (${r.stderr.slice(0, 300)})`)
    t.match(r.stdout, /pipeline/i, 'and prints what it would serve')
  }
})

t.test('the built gateway serves gateway.example.yaml', async t => {
  if (!existsSync(SERVER)) { t.fail('dist/server.js is missing: run `npm run build` first (npm test does)'); return }
  const cwd = mkdtempSync(join(tmpdir(), 'gw-example-'))
  const env: Record<string, string | undefined> = { ...process.env, GATEWAY_CONFIG: FILE, PORT: '0', ADMIN_PORT: '0', HOST: '127.0.0.1' }
  for (const v of ['GATEWAY_ADMIN_KEY', 'GATEWAY_DEMO_KEY', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY']) delete env[v]
  const child = spawn(process.execPath, [SERVER], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  child.stdout.on('data', d => { out += d })
  child.stderr.on('data', d => { out += d })
  const deadline = Date.now() + 20_000
  const addresses = (): string[] => [...out.matchAll(/"address":"(http:\/\/[^"]+)"/g)].map(m => m[1] as string)
  while (addresses().length < 2 && Date.now() < deadline && child.exitCode === null) await new Promise(r => setTimeout(r, 50))
  t.equal(addresses().length, 2, `both listeners started (${out.slice(0, 800)})`)
  if (addresses().length < 2) return
  let main = ''
  let admin = ''
  for (const base of addresses()) {
    if ((await fetch(`${base}/admin/config`, { headers: { authorization: `Bearer ${ADMIN}` } })).status === 200) admin = base
    else main = base
  }
  t.ok(main && admin, 'an inference and an admin listener')
  t.equal((await fetch(`${main}/readyz`)).status, 200)
  const res = await fetch(`${main}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo/echo', messages: [{ role: 'user', content: 'Hello' }] }),
  })
  t.equal(res.status, 200, 'the example key calls the echo model')
  t.equal((await res.json()).choices[0].message.content, 'Echo: Hello')
  t.ok(existsSync(join(cwd, 'data', 'gateway.db')), 'the SQLite ledger is where the file says')
  child.kill('SIGTERM')
  t.equal(await new Promise(r => child.on('exit', r)), 0)
})
