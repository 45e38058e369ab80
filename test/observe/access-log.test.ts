/**
 * The access log: one JSON line per call, written at settle (streams and calls the client cut
 * included), with the call's numbers and never a key, a prompt or a completion; 2xx sampled,
 * errors always; stacks only for the gateway's own failures (5xx other than 501).
 */
import type { Test } from 'tap'
import t from 'tap'
import pino from 'pino'
import { request } from 'undici'
import { buildTestApp, listen, auth, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json } from '../helpers/fake-upstream.ts'
import { embeddedDefault } from '../../core/config/default-config.ts'
import { until } from '../helpers/until.ts'
import { definePlugin } from '../../core/pipeline/plugin.ts'
import { Type } from '@sinclair/typebox'

const SECRET_PROMPT = 'PROMPT-MARKER-7f3a9c'
const UPSTREAM_KEY = 'sk-upstream-secret-42'

/** A pino line: its level and message, the access log's timings (ms) and cost, and whatever else it holds. */
type Line = { level: number, msg?: string, cost: number, durationMs: number, upstreamMs: number, overheadMs: number, settleMs: number, [key: string]: unknown }

async function setup (t: Test, accessConfig: Record<string, unknown> = {}) {
  const lines: Line[] = []
  const logger = pino({ level: 'info' }, { write (s: string) { lines.push(JSON.parse(s)) } })
  const up = await startFakeUpstream((_req, res) => json(res, 500, { error: { message: 'boom' } }))
  const base = embeddedDefault('sk-gw-unused')
  const app = await buildTestApp({
    logger,
    pipeline: [AUTH_ENTRY],
    doc: {
      logging: { level: 'info', access: accessConfig },
      providers: [
        { name: 'echo', adapter: 'echo', config: { protocol: 'chat', chunkDelayMs: 40 } },
        { name: 'up-chat', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/v1`, apiKey: UPSTREAM_KEY } },
      ],
      models: [
        (base.models as unknown[])[0],
        { id: 'vendor/failing', price: { input: 1, output: 2 }, deployments: [{ provider: 'up-chat', model: 'up-model' }] },
      ],
    },
  })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await up.close() })
  const access = () => lines.filter(l => l.msg === 'access')
  return { app, url, lines, access }
}

const chatBody = (extra: Record<string, unknown> = {}) => JSON.stringify({ model: 'echo/echo-1', messages: [{ role: 'user', content: `say ${SECRET_PROMPT}` }], ...extra })

async function post (url: string, path: string, body: string, headers: Record<string, string> = auth()) {
  const res = await request(url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
  const text = await res.body.text()
  return { status: res.statusCode, headers: res.headers, text }
}

t.test('one line per call with the call\'s numbers, never a key, a prompt or a completion', async t => {
  const { url, lines, access } = await setup(t)
  const ok = await post(url, '/v1/chat/completions', chatBody())
  t.equal(ok.status, 200)
  t.match(ok.text, SECRET_PROMPT, 'the echo answer holds the prompt (so the log check means something)')
  const streamed = await post(url, '/v1/chat/completions', chatBody({ stream: true, stream_options: { include_usage: true } }))
  t.equal(streamed.status, 200)
  t.match(String(streamed.headers.traceresponse), /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, 'a stream carries traceresponse too')
  const badKey = await post(url, '/v1/chat/completions', chatBody(), { authorization: 'Bearer sk-gw-not-a-real-key-000' })
  t.equal(badKey.status, 401)
  const failing = await post(url, '/v1/chat/completions', JSON.stringify({ model: 'vendor/failing', messages: [{ role: 'user', content: SECRET_PROMPT }] }))
  t.equal(failing.status, 502)
  t.ok(await until(() => access().length === 4), 'four access lines')

  const [a, s, k, f] = access()
  t.match(a, {
    level: 30, route: 'chat', method: 'POST', status: 200, model: 'echo/echo-1', provider: 'echo', attempts: 1,
    ip: '127.0.0.1', keyId: 'key-test', organization: 'org-test', project: 'proj-test', stream: false,
    traceId: /^[0-9a-f]{32}$/, ttfbMs: Number, durationMs: Number, upstreamMs: Number, overheadMs: Number,
    inputTokens: Number, cachedInputTokens: Number, outputTokens: Number, cost: Number,
  })
  t.ok(a.cost > 0, 'cost at the catalog price')
  t.ok(a.durationMs >= a.upstreamMs && Math.abs(a.overheadMs - (a.durationMs - a.upstreamMs)) < 0.01, 'overhead = total − upstream')
  t.match(s, { status: 200, stream: true, provider: 'echo', outputTokens: Number })
  t.equal(s.traceId, String(streamed.headers.traceresponse).split('-')[1], 'the access log has the trace id of traceresponse')
  t.match(k, { status: 401, code: 'GW_ERR_AUTH_INVALID_KEY', keyId: undefined, attempts: 0 })
  t.match(f, { status: 502, code: 'GW_ERR_UPSTREAM_FAILED', provider: 'up-chat', attempts: 1, model: 'vendor/failing' })

  const all = lines.map(l => JSON.stringify(l)).join('\n')
  t.notMatch(all, SECRET_PROMPT, 'no prompt and no completion in any log line')
  t.notMatch(all, TEST_KEY, 'no client key')
  t.notMatch(all, 'sk-gw-not-a-real-key', 'not even a wrong key')
  t.notMatch(all, UPSTREAM_KEY, 'no provider key')
})

t.test('stacks: kept for 5xx at error, never for 4xx or 501', async t => {
  const { url, lines, access } = await setup(t)
  t.equal((await post(url, '/v1/chat/completions', chatBody(), {})).status, 401)
  t.equal((await post(url, '/v1/nowhere', '{}')).status, 404)
  t.equal((await post(url, '/v1/chat/completions', '{"model":')).status, 400)
  t.equal((await post(url, '/v1/embeddings', JSON.stringify({ model: 'x', input: 'y' }))).status, 501)
  t.ok(await until(() => access().length === 4))
  t.same(lines.filter(l => JSON.stringify(l).includes('"stack"')), [], 'no stack for client errors or 501')
  t.same(lines.filter(l => l.level >= 50), [], 'nothing at error level')

  t.equal((await post(url, '/v1/chat/completions', JSON.stringify({ model: 'vendor/failing', messages: [{ role: 'user', content: 'x' }] }))).status, 502)
  t.ok(await until(() => access().length === 5))
  const errors = lines.filter(l => l.level === 50)
  t.equal(errors.length, 1, 'the 502 is logged at error')
  t.match(errors[0], { code: 'GW_ERR_UPSTREAM_FAILED', err: { stack: /Error/ } }, 'with its stack')
})

t.test('a stream the client cuts is logged once, as a client close', async t => {
  const { url, access } = await setup(t)
  const ac = new AbortController()
  const res = await request(url + '/v1/chat/completions', {
    method: 'POST', headers: { 'content-type': 'application/json', ...auth() }, signal: ac.signal,
    body: JSON.stringify({ model: 'echo/echo-1', stream: true, messages: [{ role: 'user', content: 'one two three four five six seven eight nine ten eleven twelve' }] }),
  })
  t.equal(res.statusCode, 200)
  for await (const _chunk of res.body) { ac.abort(); break }
  t.ok(await until(() => access().length === 1), 'logged at settle')
  await new Promise(resolve => setTimeout(resolve, 100))
  t.equal(access().length, 1, 'exactly once')
  t.match(access()[0], { status: 200, stream: true, clientAborted: true, ttfbMs: Number })
})

t.test('sampling: 2xx sampled at sampleRate, errors always; level and off switch', async t => {
  const none = await setup(t, { sampleRate: 0, level: 'warn' })
  for (let i = 0; i < 3; i++) t.equal((await post(none.url, '/v1/chat/completions', chatBody())).status, 200)
  t.equal((await post(none.url, '/v1/chat/completions', chatBody(), {})).status, 401)
  t.ok(await until(() => none.access().length === 1))
  await new Promise(resolve => setTimeout(resolve, 50))
  t.equal(none.access().length, 1, 'only the error')
  t.match(none.access()[0], { status: 401, level: 40 }, 'at the configured level')

  const off = await setup(t, { enabled: false })
  t.equal((await post(off.url, '/v1/chat/completions', chatBody(), {})).status, 401)
  t.equal((await post(off.url, '/v1/chat/completions', chatBody())).status, 200)
  await new Promise(resolve => setTimeout(resolve, 50))
  t.equal(off.access().length, 0, 'access log off: no line')
})

t.test('behind trusted proxies the access log shows the client IP the IP limit counts', async t => {
  const lines: Line[] = []
  const logger = pino({ level: 'info' }, { write (s: string) { lines.push(JSON.parse(s)) } })
  const app = await buildTestApp({
    logger,
    pipeline: [{ plugin: 'ip-limit', config: { limit: 1, windowMs: 60000 } }, AUTH_ENTRY],
    doc: { logging: { level: 'info' }, server: { trustedProxies: ['127.0.0.1', '10.0.0.0/8'] } },
  })
  const url = await listen(app)
  t.teardown(() => app.close())
  const from = (xff: string) => post(url, '/v1/chat/completions', chatBody(), { ...auth(), 'x-forwarded-for': xff })
  t.equal((await from('203.0.113.7')).status, 200)
  t.equal((await from('203.0.113.8, 10.1.2.3')).status, 200, 'another client behind two trusted proxies: its own window')
  t.equal((await from('203.0.113.7')).status, 429, 'the same client again: over its limit')
  t.equal((await from('203.0.113.9, not-an-address')).status, 200, 'a hop that is not an address: nothing of the header is believed, the proxy is the client')
  const access = () => lines.filter(l => l.msg === 'access')
  t.ok(await until(() => access().length === 4))
  t.same(access().map(l => [l.status, l.ip]), [[200, '203.0.113.7'], [200, '203.0.113.8'], [429, '203.0.113.7'], [200, '127.0.0.1']])
})

t.test('the settle is timed apart: durationMs ends with the response, settleMs is the settle after it', async t => {
  const lines: Line[] = []
  const logger = pino({ level: 'info' }, { write (s: string) { lines.push(JSON.parse(s)) } })
  let release: () => void = () => {}
  const held = new Promise<void>(resolve => { release = resolve })
  let settling = false
  // A settle the client never waits for (like the ledger's charge), held until the test releases it.
  const slowSettle = definePlugin({
    name: 'slow-settle',
    phase: 'admit',
    configSchema: Type.Object({}),
    create: () => ({ onRequest () {}, async onSettle () { settling = true; await held } }),
  })
  const app = await buildTestApp({ logger, plugins: [slowSettle], pipeline: [AUTH_ENTRY, { plugin: 'slow-settle' }], doc: { logging: { level: 'info' } } })
  const url = await listen(app)
  t.teardown(async () => { release(); await app.close() })
  const sent = performance.now()
  const res = await post(url, '/v1/chat/completions', chatBody())
  const clientMs = performance.now() - sent
  t.equal(res.status, 200, 'the client has its whole answer while the settle is still held')
  t.ok(await until(() => settling))
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal(lines.filter(l => l.msg === 'access').length, 0, 'the line is written once the settle is over')
  release()
  t.ok(await until(() => lines.some(l => l.msg === 'access')))
  const line = lines.find(l => l.msg === 'access')!
  t.match(line, { status: 200, durationMs: Number, overheadMs: Number, settleMs: Number })
  t.ok(line.settleMs >= 250, `settleMs (${line.settleMs}) holds the settle the test held for 300 ms`)
  t.ok(line.durationMs < clientMs + 150, `durationMs (${line.durationMs}) does not: it ends with the response the client got in ${clientMs.toFixed(1)} ms`)
  t.ok(Math.abs(line.overheadMs - (line.durationMs - line.upstreamMs)) < 0.01, 'overhead = total − upstream, settle excluded')
})
