/**
 * Graceful shutdown of the built server after many SQLite writes: exit code 0, no signal, no
 * native assertion on stderr, every usage record committed. Runs on whichever Node runs the
 * suite (CI runs the suite on Node 24 and again on Node 22), so each runtime is covered.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { once } from 'node:events'
import Database from 'better-sqlite3'

const SERVER = resolve('dist/server.js')
const KEY = 'sk-gw-demo-shutdown-test'

t.test('SIGTERM after SQLite writes under concurrency: exit 0, no signal, all usage committed', async t => {
  if (!existsSync(SERVER)) {
    // `npm test` builds first (pretest); a bare `npx tap` on a fresh clone has no dist/ yet.
    if (process.env.CI === 'true') t.fail('dist/server.js is missing: CI must run `npm run build` before `npm test`')
    else t.skip('dist/server.js not built (run `npm run build`)', () => {})
    return
  }
  const cwd = mkdtempSync(join(tmpdir(), 'gw-shutdown-'))
  const child = spawn(process.execPath, [SERVER], {
    cwd,
    env: { ...process.env, PORT: '0', GATEWAY_CONFIG: '', ADMIN_PORT: '0', GATEWAY_DEMO_KEY: KEY, GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  let err = ''
  child.stdout.on('data', d => { out += d })
  child.stderr.on('data', d => { err += d })
  const deadline = Date.now() + 20_000
  while (!/Gateway on (http:\/\/\S+)/.test(out) && Date.now() < deadline && child.exitCode === null) await new Promise(r => setTimeout(r, 50))
  const base = /Gateway on (http:\/\/[^\s(]+?)\s/.exec(out)?.[1]?.replace(/\.$/, '')
  t.ok(base, 'server printed its address')
  if (!base) return

  // 112 calls (under the demo config's 120-per-minute IP limit), 16 in flight at a time: JSON and streamed, on both routes, each one a reservation,
  // a usage record and a debit in the SQLite file.
  const TOTAL = 112
  let next = 0
  let ok = 0
  const call = async (i: number): Promise<void> => {
    const stream = i % 2 === 1
    const messages = i % 4 >= 2
    const res = await fetch(`${base}${messages ? '/v1/messages' : '/v1/chat/completions'}`, {
      method: 'POST',
      headers: messages
        ? { 'x-api-key': KEY, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }
        : { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: messages ? 'msgvendor/echo-1' : 'echo/echo-1', max_tokens: 50, stream, messages: [{ role: 'user', content: `call ${i}` }] }),
    })
    await res.text()
    if (res.status === 200) ok++
  }
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < TOTAL) await call(next++)
  }))
  t.equal(ok, TOTAL, 'every call answered 200')

  child.kill('SIGTERM')
  const [code, signal] = await once(child, 'exit')
  t.equal(signal, null, 'the process was not ended by a signal (no abort, no core dump)')
  t.equal(code, 0, 'SIGTERM shuts down with exit code 0')
  t.notMatch(err, /Assertion failed|Aborted|Segmentation fault|FATAL ERROR/, 'no native failure on stderr')

  const db = new Database(join(cwd, 'data', 'gateway.db'), { readonly: true })
  t.teardown(() => db.close())
  const { n } = db.prepare('SELECT count(*) AS n FROM usage_records').get() as { n: number }
  t.equal(n, TOTAL, 'every call has its usage record: batched charges were flushed before exit')
})
