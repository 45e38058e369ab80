// Requests refused before anyone is known (issue 14): the official SDKs read a 413 sent while they
// were still writing, and a gateway process (dist/server.js, its RSS measured apart from the test's)
// does not buffer 60 MB bodies sent to an unknown route or with a bad key.
import t from 'tap'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { rawRequest, head } from '../helpers/raw-http.ts'

const MB = 1024 * 1024

t.test('the official SDKs get their typed 413 for a body over the limit, not a connection error', async t => {
  const app = await buildTestApp({ pipeline: [{ plugin: 'size-limit', config: { maxBytes: 1024 } }, AUTH_ENTRY] })
  const base = await listen(app)
  t.teardown(() => app.close())
  const big = 'x'.repeat(8 * MB)

  t.test('openai: APIError with status 413 and code request_too_large', async t => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
    const err = await client.chat.completions.create({ model: 'echo/echo-1', messages: [{ role: 'user', content: big }] }).then(() => undefined, (e: unknown) => e)
    t.ok(err instanceof OpenAI.APIError, `an APIError (${(err as Error)?.constructor?.name}: ${(err as Error)?.message})`)
    t.notOk(err instanceof OpenAI.APIConnectionError, 'not a connection error')
    t.equal((err as InstanceType<typeof OpenAI.APIError>).status, 413)
    t.equal((err as InstanceType<typeof OpenAI.APIError>).code, 'request_too_large')
  })

  t.test('@anthropic-ai/sdk: ContentTooLargeError (413, request_too_large)', async t => {
    const client = new Anthropic({ baseURL: base, apiKey: TEST_KEY, maxRetries: 0 })
    const err = await client.messages.create({ model: 'msgvendor/echo-1', max_tokens: 16, messages: [{ role: 'user', content: big }] }).then(() => undefined, (e: unknown) => e)
    t.ok(err instanceof Anthropic.ContentTooLargeError, `a ContentTooLargeError (${(err as Error)?.constructor?.name}: ${(err as Error)?.message})`)
    t.notOk(err instanceof Anthropic.APIConnectionError, 'not a connection error')
    t.equal((err as InstanceType<typeof Anthropic.APIError>).status, 413)
    t.match((err as InstanceType<typeof Anthropic.APIError>).error, { type: 'error', error: { type: 'request_too_large' } })
  })
})

const SERVER = resolve('dist/server.js')

/** Peak and current resident memory of a process, in bytes (Linux /proc). */
function memoryOf (pid: number): { hwm: number, rss: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024
  return { hwm: kb('VmHWM'), rss: kb('VmRSS') }
}

t.test('60 MB bodies to an unknown route or with a bad key are never buffered (gateway RSS stays flat)', async t => {
  if (!existsSync(SERVER) || !existsSync('/proc/self/status')) {
    if (process.env.CI === 'true' && !existsSync(SERVER)) t.fail('dist/server.js is missing: build first')
    else t.skip('needs dist/server.js and Linux /proc', () => {})
    return
  }
  const dir = mkdtempSync(join(tmpdir(), 'gw-early-'))
  const config = join(dir, 'gateway.json')
  writeFileSync(config, JSON.stringify({
    server: { port: 0 },
    logging: { level: 'info' },
    stores: { ledger: { path: join(dir, 'gateway.db') } },
    providers: [{ name: 'echo', adapter: 'echo' }],
    models: [{ id: 'echo/echo-1', deployments: [{ provider: 'echo' }] }],
    pipeline: [{ plugin: 'size-limit' }, AUTH_ENTRY],
  }))
  const child = spawn(process.execPath, ['--max-semi-space-size=8', SERVER], { cwd: dir, env: { ...process.env, GATEWAY_CONFIG: config, PORT: '0', GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  child.stdout.on('data', d => { out += d })
  child.stderr.on('data', d => { out += d })
  const deadline = Date.now() + 20_000
  while (!/"address":"http:\/\/[^"]+:(\d+)"/.test(out) && Date.now() < deadline && child.exitCode === null) await new Promise(r => setTimeout(r, 50))
  const port = Number(/"address":"http:\/\/[^"]+:(\d+)"/.exec(out)?.[1])
  if (!t.ok(port > 0, `gateway listening (${out.slice(0, 300)})`)) return

  // Warm up: one served call and one refused call, so the baseline includes what any request costs.
  for (const h of [head('GET', '/healthz'), head('POST', '/v1/nope', { 'content-type': 'application/json', 'content-length': 2 }) + '{}']) await rawRequest(port, { head: h, waitCloseMs: 50 })
  const before = memoryOf(child.pid!)

  const flood = async (path: string, headers: Record<string, string>) => {
    const all = await Promise.all(Array.from({ length: 20 }, () => rawRequest(port, {
      head: head('POST', path, { 'content-type': 'application/json', 'content-length': 60 * MB, ...headers }),
      flood: 60 * MB,
      untilFlooded: true,
      maxMs: 90_000,
    })))
    return all.map(r => r.status)
  }
  const unknown = await flood('/v1/nope', { authorization: `Bearer ${TEST_KEY}` })
  t.same([...new Set(unknown)], [404], '20 × 404')
  const badKey = await flood('/v1/chat/completions', { authorization: 'Bearer sk-gw-not-a-key' })
  t.same([...new Set(badKey)], [401], '20 × 401')
  const after = memoryOf(child.pid!)
  const grew = after.hwm - before.hwm
  // Buffering would need 20 × 60 MB (1.2 GB) at once, and even one buffered and parsed body more
  // than 120 MB. Discarding the bodies (so each client reads its answer) still reads them: node
  // copies each body chunk into a fresh buffer, and V8 collects those only once about 64 MB of
  // them piled up, later when the machine is loaded (60–134 MB seen), whatever the number or size
  // of the bodies. The bound tells the two apart with room for a loaded CI machine.
  t.ok(grew < 256 * MB, `peak RSS grew ${(grew / MB).toFixed(1)} MB for 2 × 20 × 60 MB of refused bodies (before ${(before.hwm / MB).toFixed(0)} MB, after ${(after.hwm / MB).toFixed(0)} MB)`)
  t.equal(child.exitCode, null, 'the gateway is still up')
  child.kill('SIGTERM')
})
