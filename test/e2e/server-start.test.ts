import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { once } from 'node:events'

const SERVER = resolve('dist/server.js')
const KEY = 'sk-gw-demo-start-test'

t.test('the README quick start: built server on the embedded default', async t => {
  if (!existsSync(SERVER)) {
    // `npm start` and .ci/run build first; a bare `npx tap` on a fresh clone has no dist/ yet.
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: CI must run `npm run build` before `npm test`')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const cwd = mkdtempSync(join(tmpdir(), 'gw-start-'))
  // ADMIN_PORT=0: the embedded default's admin listener takes any free port (8081 may be taken).
  const child = spawn(process.execPath, [SERVER], { cwd, env: { ...process.env, PORT: '0', ADMIN_PORT: '0', GATEWAY_CONFIG: '', GATEWAY_DEMO_KEY: KEY, GATEWAY_ADMIN_KEY: '', GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  child.stdout.on('data', d => { out += d })
  child.stderr.on('data', d => { out += d })
  const deadline = Date.now() + 20_000
  while (!/Gateway on (http:\/\/\S+)/.test(out) && Date.now() < deadline && child.exitCode === null) await new Promise(r => setTimeout(r, 50))
  const base = /Gateway on (http:\/\/[^\s(]+?)\s/.exec(out)?.[1]?.replace(/\.$/, '')
  t.ok(base, `server printed its address (${out.slice(0, 300)})`)
  t.match(out, `Demo key: ${KEY}`)
  if (!base) return

  const chat = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'echo/echo-1', messages: [{ role: 'user', content: 'Hello' }] }),
  })
  t.equal(chat.status, 200)
  t.equal((await chat.json()).choices[0].message.content, 'Echo: Hello')
  const msg = await fetch(`${base}/v1/messages`, {
    method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'msgvendor/echo-1', max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }] }),
  })
  t.equal(msg.status, 200)
  t.equal((await msg.json()).content[0].text, 'Echo: Hello')
  t.ok(existsSync(join(cwd, 'data', 'gateway.db')), 'the embedded ledger is a SQLite file under ./data/')

  // The console on the embedded default: its URL and a generated admin key printed once.
  const m = /Console: (http:\/\/127\.0\.0\.1:\d+)\/console \(sign in with the admin key (gw-admin-[\w-]{32})\)/.exec(out)
  t.ok(m, `the console's URL and admin key are printed (${out.slice(0, 600)})`)
  if (m) {
    const [, admin, adminKey] = m as unknown as [string, string, string]
    const page = await fetch(`${admin}/console`)
    t.equal(page.status, 200, 'the console is served on loopback')
    t.match(await page.text(), /<div id="app">/)
    const cfg = await fetch(`${admin}/admin/config`, { headers: { authorization: `Bearer ${adminKey}` } })
    t.equal(cfg.status, 200, 'the printed admin key signs in')
    const body = await cfg.json()
    t.equal(body.source, 'embedded default')
    t.notMatch(JSON.stringify(body), adminKey, 'and is masked in the config view')
    const demo = await fetch(`${admin}/admin/config`, { headers: { authorization: `Bearer ${KEY}` } })
    t.equal(demo.status, 401, 'the demo key is a client key: refused like any wrong key')
    await demo.arrayBuffer()
    t.equal(out.split(adminKey).length - 1, 1, 'the admin key is printed once')
  }

  child.kill('SIGTERM')
  const [code, signal] = await once(child, 'exit')
  t.equal(signal, null, 'not ended by a signal')
  t.equal(code, 0, 'SIGTERM shuts down cleanly')
})

t.test('a bad config stops start-up with a precise message', async t => {
  if (!existsSync(SERVER)) {
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: CI must run `npm run build` before `npm test`')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const child = spawn(process.execPath, [SERVER], { env: { ...process.env, GATEWAY_CONFIG: resolve('test/fixtures/config/bad-port.yaml') }, stdio: ['ignore', 'pipe', 'pipe'] })
  let err = ''
  child.stderr.on('data', d => { err += d })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(err, /Invalid config in .*bad-port\.yaml at \/server\/port: must be <= 65535/)
})

t.test('an older system Node gets a message, not a crash', async t => {
  // The machines this project runs on ship an older system Node (20) beside the Node 24 the
  // project brings; where there is none older than 22, there is nothing to check.
  const system = spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' })
  const major = Number(/^v(\d+)/.exec(system.stdout ?? '')?.[1])
  if (system.error || !(major < 22)) {
    t.skip(`no system Node older than 22 at /usr/bin/node (${system.error?.message ?? system.stdout.trim()})`, () => {})
    return
  }
  if (!existsSync(SERVER)) {
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: CI must run `npm run build` before `npm test`')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const r = spawnSync('/usr/bin/node', [SERVER], { encoding: 'utf8', env: { ...process.env, PORT: '0', GATEWAY_CONFIG: '' } })
  t.equal(r.signal, null, 'no crash')
  t.equal(r.status, 1)
  t.match(r.stderr, /Node\.js v\d+\.\d+\.\d+ is too old; run it on Node 22\.19 or later/)
})
