// Upstream answers are read within caps (issue 13 item 7) and upstream text reaches clients and
// logs only sanitized or not at all (issue 14 item 7). Listening gateway, loopback fake upstreams.
import t, { type Test } from 'tap'
import pino from 'pino'
import { buildTestApp, listen, auth, AUTH_ENTRY, testDoc } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, sse, chatTextStream, messagesTextStream, chatChunk, msgEvent, chatCompletion } from '../helpers/fake-upstream.ts'
import { streamCall } from '../helpers/stream-client.ts'
import { buildConfig } from '../../core/config/config.ts'
import { until } from '../helpers/until.ts'

const CAP = 4096

async function setup (t: Test, server: Record<string, unknown> = {}) {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const lines: { msg?: string, [key: string]: unknown }[] = []
  const logger = pino({ level: 'info' }, { write: (s: string) => { lines.push(JSON.parse(s)) } })
  const app = await buildTestApp({ logger, doc: { ...upstreamDoc(chatUp.origin, msgUp.origin), server }, pipeline: [AUTH_ENTRY] })
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close() })
  const url = await listen(app)
  return { url, chatUp, msgUp, lines }
}

const ROUTES = [
  { path: '/v1/chat/completions', model: 'vendor/chat-model', upstream: 'chat' as const },
  { path: '/v1/chat/completions', model: 'msgvendor/msg-model', upstream: 'messages' as const },
  { path: '/v1/messages', model: 'vendor/chat-model', upstream: 'chat' as const },
  { path: '/v1/messages', model: 'msgvendor/msg-model', upstream: 'messages' as const },
]
const bodyFor = (model: string, stream: boolean) => ({ model, max_tokens: 100, stream, messages: [{ role: 'user', content: 'hi' }] })

async function call (url: string, path: string, body: unknown) {
  const res = await fetch(url + path, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const text = await res.text()
  let parsed: any = text
  try { parsed = JSON.parse(text) } catch { /* a stream */ }
  return { status: res.status, body: parsed, text, contentType: res.headers.get('content-type') ?? '' }
}

/** The route's 502 body: numeric code on chat, api_error on messages. */
function is502 (t: Test, path: string, r: Awaited<ReturnType<typeof call>>): void {
  t.equal(r.status, 502)
  t.match(r.contentType, /application\/json/)
  if (path === '/v1/messages') t.match(r.body, { type: 'error', error: { type: 'api_error', message: String } })
  else t.match(r.body, { error: { code: 502, message: String } })
}

t.test('config – the caps have defaults and are checked', async t => {
  const c = buildConfig(testDoc(), 'test', process.cwd(), {})
  t.equal(c.server.maxUpstreamBodyBytes, 32 * 1024 * 1024)
  t.equal(c.server.maxUpstreamEventBytes, 8 * 1024 * 1024)
  t.throws(() => buildConfig(testDoc({ doc: { server: { maxUpstreamBodyBytes: 0 } } }), 'test', process.cwd(), {}), /maxUpstreamBodyBytes/)
  t.throws(() => buildConfig(testDoc({ doc: { server: { maxUpstreamEventBytes: '8MB' } } }), 'test', process.cwd(), {}), /maxUpstreamEventBytes/)
})

t.test('a non-streamed upstream answer past server.maxUpstreamBodyBytes: 502 in the route\'s shape, logged, upstream closed', async t => {
  const { url, chatUp, msgUp, lines } = await setup(t, { maxUpstreamBodyBytes: CAP })
  const big = 'b'.repeat(CAP * 2)
  for (const r of ROUTES) {
    const up = r.upstream === 'chat' ? chatUp : msgUp
    // With a Content-Length over the cap.
    up.handle((_req, res) => json(res, 200, r.upstream === 'chat' ? chatCompletion(big) : { type: 'message', content: [{ type: 'text', text: big }] }))
    is502(t, r.path, await call(url, r.path, bodyFor(r.model, false)))
    // Chunked, without a length, and never-ending: the gateway stops reading at the cap.
    up.handle(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"pad":"')
      for (let i = 0; i < 10_000 && !res.destroyed; i++) {
        res.write('c'.repeat(1024))
        await new Promise(resolve => setTimeout(resolve, 1))
      }
      res.end('"}')
    })
    is502(t, r.path, await call(url, r.path, bodyFor(r.model, false)))
    t.ok(await until(() => up.openSockets === 0, 5000), 'the upstream connection was closed')
  }
  t.ok(lines.filter(l => /maxUpstreamBodyBytes/.test(l.msg ?? '')).length >= ROUTES.length * 2, 'a log line for each')
  // Within the cap, answers pass.
  chatUp.handle((_req, res) => json(res, 200, chatCompletion('small')))
  t.equal((await call(url, '/v1/chat/completions', bodyFor('vendor/chat-model', false))).status, 200)
})

t.test('an upstream stream event past server.maxUpstreamEventBytes', async t => {
  const { url, chatUp, msgUp, lines } = await setup(t, { maxUpstreamEventBytes: CAP })
  const huge = 'h'.repeat(CAP * 2)

  await t.test('before the first byte: 502 in the route\'s shape', async t => {
    chatUp.handle((_req, res) => sse(res, [chatChunk({ role: 'assistant', content: huge })]))
    msgUp.handle((_req, res) => sse(res, [`event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: huge } })}\n\n`]))
    for (const r of ROUTES) is502(t, r.path, await call(url, r.path, bodyFor(r.model, true)))
  })

  await t.test('after the first byte: the protocol\'s error event', async t => {
    chatUp.handle((_req, res) => sse(res, [...chatTextStream(['ok']).slice(0, 2), chatChunk({ content: huge }), ...chatTextStream(['ok']).slice(2)], { delayMs: 5 }))
    msgUp.handle((_req, res) => sse(res, [...messagesTextStream(['ok']).slice(0, 4), msgEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: huge } }), ...messagesTextStream(['ok']).slice(4)], { delayMs: 5 }))
    for (const r of ROUTES) {
      const s = await streamCall(url, r.path, bodyFor(r.model, true))
      t.equal(s.status, 200)
      t.notMatch(s.body, /hhhh/, 'the oversize event never reaches the client')
      if (r.path === '/v1/messages') t.match(s.body, /event: error\ndata: \{"type":"error","error":\{"type":"api_error"/)
      else t.match(s.body, /data: \{"error":\{"message":"[^"]+","type":"server_error","param":null,"code":502\}\}\n\n$/)
    }
  })
  t.ok(lines.filter(l => /maxUpstreamEventBytes/.test(l.msg ?? '')).length >= ROUTES.length * 2, 'a log line for each')
})

t.test('a mid-stream upstream error reaches the client sanitized, on every route', async t => {
  const { url, chatUp, msgUp } = await setup(t)
  const leak = 'backend https://10.0.0.5:8000/internal refused key sk-live-abcdefghijkl, Bearer tok-123456'
  chatUp.handle((_req, res) => sse(res, [...chatTextStream(['Hi']).slice(0, 2), `data: ${JSON.stringify({ error: { message: leak, type: 'server_error', code: 500 } })}\n\n`], { delayMs: 5 }))
  msgUp.handle((_req, res) => sse(res, [...messagesTextStream(['Hi']).slice(0, 4), msgEvent('error', { error: { type: 'overloaded_error', message: leak } })], { delayMs: 5 }))
  for (const r of ROUTES) {
    const s = await streamCall(url, r.path, bodyFor(r.model, true))
    t.equal(s.status, 200)
    t.notMatch(s.body, /10\.0\.0\.5|sk-live-abcdefghijkl|tok-123456/, `${r.path} ${r.model}: no upstream address or secret`)
    t.match(s.body, /backend \[url\] refused key \[redacted\], Bearer \[redacted\]/, 'the sanitized text is kept')
  }
  // An error event whose text is huge is cut, not relayed whole.
  msgUp.handle((_req, res) => sse(res, [...messagesTextStream(['Hi']).slice(0, 4), msgEvent('error', { error: { type: 'api_error', message: 'e'.repeat(32_000) } })], { delayMs: 5 }))
  const s = await streamCall(url, '/v1/messages', bodyFor('msgvendor/msg-model', true))
  t.notMatch(s.body, /e{600}/, 'cut')
})

t.test('a 2xx answer that is not JSON: the log holds its length and content type, never its text', async t => {
  const { url, chatUp, lines } = await setup(t)
  const completion = 'SECRET COMPLETION TEXT the model wrote for the user '.repeat(20)
  chatUp.handle((_req, res) => { res.writeHead(200, { 'content-type': 'text/plain' }); res.end(completion) })
  const r = await call(url, '/v1/chat/completions', bodyFor('vendor/chat-model', false))
  t.equal(r.status, 502)
  const line = lines.find(l => /not JSON/.test(l.msg ?? ''))
  t.ok(line, 'logged')
  t.match(line, { contentType: 'text/plain', bodyChars: completion.length })
  t.notMatch(JSON.stringify(lines), /SECRET COMPLETION/, 'no completion text in any log line')
})
