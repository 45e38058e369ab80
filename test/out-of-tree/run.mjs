#!/usr/bin/env node
// Out-of-tree run: the examples as users run them. Packs the gateway (`npm pack`, which builds),
// copies each example under examples/ to a temporary folder outside the repo, installs the tarball
// there (offline-safe: every dependency is already in the npm cache from the main install; install
// scripts are skipped, the SQLite binding ships prebuilt), runs the example's own tests with the
// installed test kit, then starts a listening gateway from the installed package that loads the
// example through `module:` and checks it over HTTP. Exit code 0 when everything passed.
import { execFileSync, spawn } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import assert from 'node:assert/strict'

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const node = process.execPath
const work = mkdtempSync(join(tmpdir(), 'gw-out-of-tree-'))
const KEY = 'sk-gw-out-of-tree-key-0001'
const started = Date.now()
const log = msg => process.stdout.write(`[out-of-tree +${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}\n`)

function sh (cmd, args, cwd) {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
}

/** Copies an example outside the repo and installs the packed gateway next to it. */
function install (name, tarball) {
  const dir = join(work, name)
  cpSync(join(repo, 'examples', name), dir, { recursive: true })
  sh('npm', ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock'], dir)
  return dir
}

/** Starts the installed gateway with `config`; resolves with its base URL once it listens. */
async function startGateway (dir, config) {
  const file = join(dir, 'gateway.json')
  writeFileSync(file, JSON.stringify(config, null, 2))
  const child = spawn(node, [join(dir, 'node_modules/model-gateway/dist/server.js')], {
    cwd: dir, env: { ...process.env, GATEWAY_CONFIG: file, PORT: '0', HOST: '127.0.0.1' }, stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${output}`)), 20_000)
    const onData = chunk => {
      output += chunk
      const m = /"address":"(http:\/\/[^"]+)"/.exec(output)
      if (m) { clearTimeout(timer); resolve(m[1]) }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('exit', code => { clearTimeout(timer); reject(new Error(`gateway exited with ${code}:\n${output}`)) })
  })
  return {
    url,
    async stop () {
      child.removeAllListeners('exit')
      const exited = new Promise(resolve => child.on('exit', resolve))
      child.kill('SIGTERM')
      await exited
    },
  }
}

async function post (url, path, body, headers = {}) {
  const res = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, ...headers }, body: JSON.stringify(body) })
  return { status: res.status, headers: res.headers, text: await res.text() }
}

const chatBody = (extra = {}) => ({ model: 'acme/large', messages: [{ role: 'user', content: 'hi' }], ...extra })
const msgBody = (extra = {}) => ({ model: 'acme/large', max_tokens: 128, messages: [{ role: 'user', content: 'hi' }], ...extra })

async function tenantCheck (tarball) {
  const dir = install('tenant-check', tarball)
  log('tenant-check installed; its own tests:')
  process.stdout.write(sh(node, ['--test', '--test-reporter=dot', 'index.test.js'], dir))
  const gw = await startGateway(dir, {
    logging: { level: 'info' },
    stores: { ledger: { path: join(dir, 'gateway.db') } },
    providers: [{ name: 'echo', adapter: 'echo', config: { protocol: 'chat' } }],
    models: [{ id: 'acme/large', deployments: [{ provider: 'echo', model: 'echo-1' }] }],
    pipeline: [
      { plugin: 'auth', config: { keys: [{ key: KEY, id: 'k1', organization: 'acme-org' }] } },
      { plugin: 'tenant-check', module: './index.js', config: { tenants: ['blue'] } },
    ],
  })
  try {
    const missing = await post(gw.url, '/v1/chat/completions', chatBody())
    assert.equal(missing.status, 403, missing.text)
    assert.equal(JSON.parse(missing.text).error.code, 'tenant_not_allowed', missing.text)
    assert.match(JSON.parse(missing.text).error.message, /Header x-tenant must name an allowed tenant/)
    const unknown = await post(gw.url, '/v1/messages', msgBody(), { 'x-tenant': 'red', 'x-locale': 'zh-CN' })
    assert.equal(unknown.status, 403, unknown.text)
    assert.equal(JSON.parse(unknown.text).error.type, 'permission_error', unknown.text)
    assert.match(JSON.parse(unknown.text).error.message, /必须是允许的租户/, unknown.text)
    for (const [path, body] of [['/v1/chat/completions', chatBody()], ['/v1/messages', msgBody()]]) {
      const ok = await post(gw.url, path, body, { 'x-tenant': 'blue' })
      assert.equal(ok.status, 200, ok.text)
      assert.equal(ok.headers.get('x-tenant-checked'), 'blue')
    }
    log('tenant-check: rejects with its own code (403 tenant_not_allowed, localized) and passes through the installed gateway')
  } finally {
    await gw.stop()
  }
}

async function acmeProvider (tarball) {
  const dir = install('acme-provider', tarball)
  log('acme-provider installed; its own tests (the conformance suite):')
  process.stdout.write(sh(node, ['--test', '--test-reporter=dot', 'index.test.js'], dir))
  const kit = await import(pathToFileURL(join(dir, 'node_modules/model-gateway/dist/testing.js')).href)
  // Acme's wire: chat completions, the key in `api-key`, cache hits in `prompt_cache_hit_tokens`.
  const usage = { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100, prompt_cache_hit_tokens: 400, prompt_cache_miss_tokens: 600 }
  const up = await kit.startFakeUpstream((req, res) => {
    if (req.headers['api-key'] !== 'acme-key') return kit.json(res, 401, { error: { message: 'no key' } })
    if (!req.body.stream) return kit.json(res, 200, { ...kit.chatCompletion('Hello'), usage })
    return kit.sse(res, [
      kit.chatChunk({ role: 'assistant', content: '' }), kit.chatChunk({ content: 'Hel' }), kit.chatChunk({ content: 'lo' }), kit.chatChunk({}, 'stop'),
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'acme-large', choices: [], usage })}\n\n`, kit.DONE,
    ])
  })
  const ledgerPath = join(dir, 'gateway.db')
  const gw = await startGateway(dir, {
    logging: { level: 'info' },
    stores: { ledger: { path: ledgerPath } },
    providers: [{ name: 'acme', adapter: 'acme-chat', module: './index.js', config: { baseUrl: `${up.origin}/v1`, apiKey: 'acme-key' } }],
    models: [{ id: 'acme/large', price: { input: 1, cachedInput: 0.5, output: 2 }, deployments: [{ provider: 'acme', model: 'acme-large' }] }],
    pipeline: [
      { plugin: 'auth', config: { keys: [{ key: KEY, id: 'k1', organization: 'acme-org' }] } },
      { plugin: 'balance', config: { organizations: [{ id: 'acme-org', initialBalance: 10 }] } },
    ],
  })
  try {
    for (const [path, body] of [['/v1/chat/completions', chatBody()], ['/v1/messages', msgBody()]]) {
      for (const stream of [false, true]) {
        const r = await post(gw.url, path, { ...body, stream })
        assert.equal(r.status, 200, r.text)
        assert.equal(r.headers.get('x-gw-provider'), 'acme')
        assert.match(r.text, /Hel|Hello/)
      }
    }
    assert.equal(up.requests.length, 4)
    assert.ok(up.requests.every(q => q.body.model === 'acme-large' && !q.headers.authorization))
  } finally {
    await gw.stop()
    await up.close()
  }
  // Billing, read with the installed admin CLI: each call is (600 × 1 + 400 × 0.5 + 100 × 2) / 1e6.
  const admin = join(dir, 'node_modules/model-gateway/dist/cli/admin.js')
  const records = JSON.parse(sh(node, [admin, '--sqlite', ledgerPath, 'usage', 'export', '--format', 'json'], dir))
  assert.equal(records.length, 4, JSON.stringify(records))
  for (const rec of records) {
    assert.equal(rec.provider, 'acme')
    assert.equal(rec.inputTokens, 1000)
    assert.equal(rec.cachedInputTokens, 400, 'cache hits read from Acme\'s own usage field')
    assert.equal(rec.outputTokens, 100)
    assert.equal(Number(rec.cost), 0.001)
  }
  const balance = JSON.parse(sh(node, [admin, '--sqlite', ledgerPath, 'balance', 'show', 'acme-org', '--json'], dir))
  assert.equal(Number(balance.balance), 9.996, JSON.stringify(balance))
  log('acme-provider: answers on both routes, streamed and not; usage and charge right in the ledger')
}

try {
  log(`packing the gateway into ${work}`)
  // npm pack builds first (prepack); a caller that has just built (the tap test) skips that.
  const noBuild = process.env.OUT_OF_TREE_NO_BUILD === '1' ? ['--ignore-scripts'] : []
  const packed = JSON.parse(sh('npm', ['pack', '--json', ...noBuild, '--pack-destination', work], repo))
  const tarball = join(work, packed[0].filename)
  await tenantCheck(tarball)
  await acmeProvider(tarball)
  log('all passed')
  rmSync(work, { recursive: true, force: true })
} catch (err) {
  process.stderr.write(`out-of-tree run failed (files kept in ${work}):\n${err.stack ?? err}\n`)
  process.exitCode = 1
}
