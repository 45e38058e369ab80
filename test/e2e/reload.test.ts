/**
 * SIGHUP reloads the config file of the built server (dist/server.js), a real process: a new key
 * works and a removed one gets 401; a stream started before the reload finishes on the version it
 * started under; an invalid file leaves the running version serving and logs one line naming the
 * file and the path; calls in flight across reloads are neither dropped nor billed twice. The
 * observability settings: the access log's switch, level and sampling apply; metrics settings are
 * reported as needing a restart; gw_config_info names the version serving after each reload.
 */
import t, { type Test } from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { once } from 'node:events'
import Database from 'better-sqlite3'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'

const SERVER = resolve('dist/server.js')
const KEY_A = 'sk-gw-reload-key-aaaa'
const KEY_B = 'sk-gw-reload-key-bbbb'

interface Options { keys: string[], slow?: boolean, extra?: string }

/** A config: echo models, config keys, the balance plugin on a SQLite ledger in the working directory. */
function configText (o: Options): string {
  return [
    'stores:',
    '  ledger: { backend: sqlite, path: ./gw.db }',
    'providers:',
    '  - { name: echo, adapter: echo }',
    ...(o.slow ? ['  - { name: slow, adapter: echo, config: { chunkDelayMs: 100 } }'] : []),
    'models:',
    '  - { id: echo/echo-1, price: { input: 1, output: 2 }, deployments: [{ provider: echo }] }',
    ...(o.slow ? ['  - { id: slow/echo-1, price: { input: 1, output: 2 }, deployments: [{ provider: slow }] }'] : []),
    'pipeline:',
    '  - plugin: auth',
    '    config:',
    '      keys:',
    ...o.keys.map((k, i) => `        - { key: ${k}, id: key-${i}-${k.slice(-4)}, name: k, organization: demo }`),
    '  - plugin: balance',
    '    config: { organizations: [{ id: demo, name: Demo, initialBalance: 1000 }] }',
    o.extra ?? '',
  ].join('\n') + '\n'
}

interface Server { child: ChildProcess, base: string, lines: () => any[], file: string, cwd: string }

async function start (t: Test, o: Options): Promise<Server | undefined> {
  const cwd = mkdtempSync(join(tmpdir(), 'gw-reload-'))
  const file = join(cwd, 'gateway.yaml')
  writeFileSync(file, configText(o))
  const child = spawn(process.execPath, [SERVER], { cwd, env: { ...process.env, PORT: '0', HOST: '127.0.0.1', GATEWAY_CONFIG: file, GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  child.stdout!.on('data', d => { out += d })
  child.stderr!.on('data', d => { out += d })
  const lines = (): any[] => out.split('\n').flatMap(l => { try { return [JSON.parse(l)] } catch { return [] } })
  const started = await until(() => lines().some(l => l.msg === 'gateway listening'))
  if (!started) {
    t.fail(`server did not start: ${out.slice(0, 500)}`)
    return undefined
  }
  return { child, base: lines().find(l => l.msg === 'gateway listening').address, lines, file, cwd }
}

async function until (cond: () => boolean, ms = 20_000): Promise<boolean> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) return false
    await new Promise(resolve => setTimeout(resolve, 25))
  }
  return true
}

/** The config versions logged as serving, in order. */
const versions = (s: Server): string[] => s.lines().filter(l => l.configVersion && / serves$/.test(l.msg)).map(l => l.configVersion)

async function reload (t: Test, s: Server, o: Options | string): Promise<void> {
  const before = versions(s).length
  const failedBefore = s.lines().filter(l => /config reload failed/.test(l.msg)).length
  writeFileSync(s.file, typeof o === 'string' ? o : configText(o))
  s.child.kill('SIGHUP')
  t.ok(await until(() => versions(s).length > before || s.lines().filter(l => /config reload failed/.test(l.msg)).length > failedBefore), 'the reload was logged')
}

function chat (base: string, key: string, opts: { model?: string, stream?: boolean, content?: string } = {}): Promise<Response> {
  return fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: opts.model ?? 'echo/echo-1', max_tokens: 400, stream: opts.stream ?? false, messages: [{ role: 'user', content: opts.content ?? 'Hello' }] }),
  })
}

t.test('SIGHUP reloads the config file', async t => {
  if (!existsSync(SERVER)) {
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: CI must run `npm run build` before `npm test`')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const s = await start(t, { keys: [KEY_A], slow: true })
  if (!s) return
  /** Trace ids of the inference calls answered 200: each must have exactly one usage record. */
  const billed: string[] = []
  const ok = async (res: Response): Promise<number> => {
    await res.text()
    if (res.status === 200) billed.push(res.headers.get('x-gw-trace-id')!)
    return res.status
  }
  const [first] = versions(s)
  t.match(first, /^[0-9a-f]{12}$/, 'the serving version is logged at start-up')

  t.equal(await ok(await chat(s.base, KEY_A)), 200)
  t.equal(await ok(await chat(s.base, KEY_B)), 401)

  // A stream on the slow model, started before the reload that removes its key, model and provider.
  const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ')
  const streamRes = await chat(s.base, KEY_A, { model: 'slow/echo-1', stream: true, content: words })
  t.equal(streamRes.status, 200)
  billed.push(streamRes.headers.get('x-gw-trace-id')!)
  const reader = streamRes.body!.getReader()
  let streamed = ''
  const first2 = await reader.read()
  streamed += Buffer.from(first2.value!).toString()
  const streamDone = (async () => {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      streamed += Buffer.from(value).toString()
    }
    return Date.now()
  })()

  await reload(t, s, { keys: [KEY_B] })
  const second = versions(s).at(-1)
  t.not(second, first, 'a new version serves')
  t.equal(await ok(await chat(s.base, KEY_B)), 200, 'the new key works')
  t.equal(await ok(await chat(s.base, KEY_A)), 401, 'the removed key gets 401')
  const gone = await chat(s.base, KEY_B, { model: 'slow/echo-1' })
  t.equal(await ok(gone), 404, 'the removed model is unknown to new requests')
  t.notOk(streamed.includes('[DONE]'), 'the stream was still running during the reload')
  t.notOk(s.lines().some(l => /retired$/.test(l.msg ?? '')), 'the old version is not retired while its stream runs')

  const ended = await streamDone
  t.ok(streamed.trimEnd().endsWith('data: [DONE]'), 'the stream finished whole on the version it started under')
  const text = streamed.split('\n').filter(l => l.startsWith('data: {')).map(l => JSON.parse(l.slice(6)).choices?.[0]?.delta?.content ?? '').join('')
  t.equal(text, `Echo: ${words}`, 'every chunk arrived')
  t.ok(await until(() => s.lines().some(l => l.msg === `config version ${first} retired`)), 'the old version is retired after its stream ended')
  t.ok(Date.now() >= ended)

  // Invalid files: the running version keeps serving, one error line names the file and the path.
  await reload(t, s, configText({ keys: [KEY_A], extra: '  - plugin: no-such-plugin' }))
  let errs = s.lines().filter(l => /config reload failed/.test(l.msg))
  t.equal(errs.length, 1)
  t.equal(errs[0].level, 50, 'logged as an error')
  t.match(errs[0].msg, `config reload failed, version ${second} keeps serving: Unknown plugin "no-such-plugin" in ${s.file} at /pipeline/2/plugin`)
  await reload(t, s, configText({ keys: [KEY_A] }).replace('stores:', 'server:\n  port: "${NOT_SET_ANYWHERE}"\nstores:'))
  errs = s.lines().filter(l => /config reload failed/.test(l.msg))
  t.match(errs.at(-1).msg, `Config file ${s.file} at /server/port refers to environment variable \${NOT_SET_ANYWHERE}`)
  await reload(t, s, 'models:\n  - id: x\n   deployments: []\n')
  errs = s.lines().filter(l => /config reload failed/.test(l.msg))
  t.match(errs.at(-1).msg, new RegExp(`Invalid config in ${s.file} at line \\d+, column \\d+`))
  t.equal(versions(s).at(-1), second, 'no new version')
  t.equal(await ok(await chat(s.base, KEY_B)), 200, 'the running config still serves')
  t.equal(await ok(await chat(s.base, KEY_A)), 401)

  // Settings a running process cannot change are reported, and the rest applies.
  await reload(t, s, configText({ keys: [KEY_A, KEY_B] }).replace('stores:', 'server:\n  bodyLimitBytes: 1000\nstores:'))
  const ignored = s.lines().filter(l => /ignored until restart$/.test(l.msg ?? ''))
  t.same(ignored.at(-1)?.ignored, ['/server/bodyLimitBytes'])
  t.equal(await ok(await chat(s.base, KEY_A, { content: 'x'.repeat(2000) })), 200, 'the body limit in force is still the one the process started with')

  // Many calls in flight while the config is reloaded several times: none dropped, none billed twice.
  const TOTAL = 60
  let next = 0
  const statuses: number[] = []
  const workers = Promise.all(Array.from({ length: 8 }, async () => {
    while (next < TOTAL) {
      const i = next++
      statuses.push(await ok(await chat(s.base, i % 2 ? KEY_A : KEY_B, { stream: i % 3 === 0, content: `call ${i}` })))
    }
  }))
  for (let r = 0; r < 3; r++) {
    await until(() => next >= (r + 1) * 15)
    await reload(t, s, { keys: [KEY_A, KEY_B], extra: r % 2 ? '' : '  - plugin: size-limit' })
  }
  await workers
  t.equal(statuses.length, TOTAL)
  t.same(statuses.filter(x => x !== 200), [], 'every call in flight across the reloads answered 200')

  s.child.kill('SIGTERM')
  const [code] = await once(s.child, 'exit')
  t.equal(code, 0, 'SIGTERM still shuts down cleanly after reloads')
  const db = new Database(join(s.cwd, 'gw.db'), { readonly: true })
  t.teardown(() => db.close())
  const rows = db.prepare('SELECT trace_id FROM usage_records').all() as { trace_id: string }[]
  t.same(rows.map(r => r.trace_id).sort(), [...billed].sort(), 'one usage record per call answered, none twice, none lost')
})

t.test('SIGHUP: access-log settings apply, metrics settings wait for a restart, gw_config_info follows', async t => {
  if (!existsSync(SERVER)) {
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: CI must run `npm run build` before `npm test`')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const obs = (access: string, path = '/metrics') => `logging:\n  level: info\n  access: ${access}\nmetrics:\n  listen: main\n  path: ${path}\n`
  const s = await start(t, { keys: [KEY_A], extra: obs('{ enabled: true }') })
  if (!s) return
  const configInfo = async (): Promise<string[]> => {
    const res = await fetch(`${s.base}/metrics`)
    if (res.status !== 200) return [`status ${res.status}`]
    const info = parsePrometheusTextFormat(await res.text()).find(f => f.name === 'gw_config_info')
    return info?.metrics.filter(m => m.value === '1').map(m => m.labels!.version) ?? []
  }
  // The calls' lines (the scrapes of /metrics have their own).
  const access = () => s.lines().filter(l => l.msg === 'access' && l.route === 'chat')
  const settle = () => new Promise(resolve => setTimeout(resolve, 100))

  t.equal((await chat(s.base, KEY_A)).status, 200)
  t.ok(await until(() => access().length === 1), 'an access line at start')
  t.same(await configInfo(), [versions(s)[0]], 'gw_config_info names the version serving')

  // Level and sampling apply; the metrics path needs a restart.
  await reload(t, s, configText({ keys: [KEY_A], extra: obs('{ enabled: true, level: warn, sampleRate: 0 }', '/prom') }))
  const v2 = versions(s).at(-1)!
  t.not(v2, versions(s)[0])
  t.same(s.lines().filter(l => /ignored until restart$/.test(l.msg ?? '')).at(-1)?.ignored, ['/metrics/path'], 'metrics.path is reported as needing a restart')
  t.equal((await fetch(`${s.base}/prom`)).status, 404, 'the new path is not in force')
  t.same(await configInfo(), [v2], 'gw_config_info names the new version')
  t.equal((await chat(s.base, KEY_A)).status, 200)
  t.equal((await chat(s.base, KEY_B)).status, 401)
  t.ok(await until(() => access().length === 2), 'the error is logged')
  await settle()
  t.equal(access().length, 2, 'the 2xx is sampled out')
  t.match(access()[1], { status: 401, level: 40 }, 'at the new level')

  // Off.
  await reload(t, s, configText({ keys: [KEY_A], extra: obs('{ enabled: false }') }))
  const v3 = versions(s).at(-1)!
  t.same(await configInfo(), [v3])
  t.equal((await chat(s.base, KEY_B)).status, 401)
  await settle()
  t.equal(access().length, 2, 'access log switched off: no line')

  s.child.kill('SIGTERM')
  const [code] = await once(s.child, 'exit')
  t.equal(code, 0)
})
