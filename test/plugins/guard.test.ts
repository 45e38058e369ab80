// Guard plugins through a listening gateway: ip-limit, size-limit, timeout and media-validation
// (issue 7). Clocks are injected (no sleeps for windows); upstreams are loopback fakes.
import t from 'tap'
import { request as httpRequest } from 'node:http'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, sse, chatCompletion, chatTextStream, messagesTextStream, type FakeUpstream } from '../helpers/fake-upstream.ts'
import { until } from '../helpers/until.ts'

const chat = { model: 'echo/echo-1', messages: [{ role: 'user', content: 'hi' }] }
const msgs = { model: 'echo/echo-1', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }

/** /healthz is the cheapest route to count with: these tests make probes go through the plugins. */
const PROBES_LIMITED = { server: { exemptProbesFromPlugins: false } }

t.test('ip-limit', async t => {
  t.test('the 121st request in a minute gets 429 + Retry-After; no-key and bad-key requests count; the next window is open', async t => {
    let clock = Date.UTC(2026, 0, 1, 0, 0, 0)
    const app = await buildTestApp({ now: () => clock, doc: PROBES_LIMITED, pipeline: [{ plugin: 'ip-limit' }, AUTH_ENTRY] })
    const probesExempt = await buildTestApp({ now: () => clock, pipeline: [{ plugin: 'ip-limit' }, AUTH_ENTRY] })
    t.teardown(async () => { await app.close(); await probesExempt.close() })
    const results: number[] = []
    for (let i = 0; i < 120; i++) {
      // A third without a key, a third with a bad key, a third good: all count against the IP.
      const headers = i % 3 === 0 ? {} : i % 3 === 1 ? { authorization: 'Bearer sk-gw-wrong' } : auth()
      results.push((await app.inject({ method: 'GET', url: '/v1/models', headers })).statusCode)
    }
    t.equal(results.filter(s => s === 429).length, 0, 'first 120 are not limited')
    t.equal(results.filter(s => s === 401).length, 80, 'unauthenticated ones answered 401 and still counted')
    clock += 20_000 // 20 s into the window: 40 s remain
    const over = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chat })
    t.equal(over.statusCode, 429)
    t.equal(over.headers['retry-after'], '40')
    t.same(over.json(), { error: { code: 429, message: 'You are being rate limited.' } })
    const overMsg = await app.inject({ method: 'POST', url: '/v1/messages', headers: auth(), payload: msgs })
    t.equal(overMsg.statusCode, 429)
    t.same(overMsg.json(), { error: { code: 429, message: 'You are being rate limited.' } }, 'numeric-code body on /v1/messages too')
    const health = await app.inject({ url: '/healthz' })
    t.equal(health.statusCode, 429, 'every route is covered, probes too with server.exemptProbesFromPlugins: false')
    t.ok(health.headers['x-gw-trace-id'])
    // By default a load balancer probing every second is never limited, and its probes do not
    // use up the window of the clients behind the same address.
    for (let i = 0; i < 125; i++) t.equal((await probesExempt.inject({ url: i % 2 ? '/readyz' : '/healthz' })).statusCode, 200)
    t.equal((await probesExempt.inject({ method: 'GET', url: '/v1/models', headers: auth() })).statusCode, 200, 'probes took nothing from the IP\'s window')
    for (let i = 0; i < 119; i++) await probesExempt.inject({ method: 'GET', url: '/v1/models', headers: auth() })
    t.equal((await probesExempt.inject({ method: 'GET', url: '/v1/models', headers: auth() })).statusCode, 429, 'other routes are still limited')
    t.equal((await probesExempt.inject({ url: '/healthz' })).statusCode, 200, 'probes pass while the IP is limited')
    t.equal((await probesExempt.inject({ url: '/readyz' })).statusCode, 200)
    clock += 40_000
    t.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chat })).statusCode, 200, 'next window open')
  })

  t.test('per IP; X-Forwarded-For only from trusted proxies', async t => {
    const clock = 1_000_000
    const untrusted = await buildTestApp({ now: () => clock, doc: PROBES_LIMITED, pipeline: [{ plugin: 'ip-limit', config: { limit: 2 } }, AUTH_ENTRY] })
    const trusted = await buildTestApp({ now: () => clock, doc: PROBES_LIMITED, pipeline: [{ plugin: 'ip-limit', config: { limit: 2, trustedProxies: ['127.0.0.1/32'] } }, AUTH_ENTRY] })
    t.teardown(async () => { await untrusted.close(); await trusted.close() })
    const hit = (app: typeof trusted, xff: string) => app.inject({ url: '/healthz', headers: { 'x-forwarded-for': xff } }).then(r => r.statusCode)
    t.same([await hit(untrusted, '1.1.1.1'), await hit(untrusted, '2.2.2.2'), await hit(untrusted, '3.3.3.3')], [200, 200, 429], 'spoofed XFF ignored: one socket IP')
    t.same([await hit(trusted, '1.1.1.1'), await hit(trusted, '1.1.1.1'), await hit(trusted, '1.1.1.1'), await hit(trusted, '2.2.2.2')], [200, 200, 429, 200], 'trusted proxy: client from XFF')
  })

  t.test('config accept/reject', async t => {
    await t.rejects(buildTestApp({ pipeline: [{ plugin: 'ip-limit', config: { limit: 0 } }] }), /ip-limit/)
    await t.rejects(buildTestApp({ pipeline: [{ plugin: 'ip-limit', config: { windowMs: 10 } }] }), /ip-limit/)
    await t.rejects(buildTestApp({ pipeline: [{ plugin: 'ip-limit', config: { onStoreError: 'maybe' } }] }), /ip-limit/)
    await t.rejects(buildTestApp({ pipeline: [{ plugin: 'ip-limit', config: { burst: 5 } }] }), /ip-limit/)
    const ok = await buildTestApp({ pipeline: [{ plugin: 'ip-limit', config: { limit: 5, windowMs: 1000, trustedProxies: ['10.0.0.0/8', '::1'], onStoreError: 'closed' } }] })
    await ok.close()
  })
})

/** Sends a POST with a streamed body; resolves when the response arrives, with the bytes written by then. */
function streamedPost (url: string, path: string, total: number, opts: { contentLength?: boolean, headers?: Record<string, string> } = {}): Promise<{ status: number, body: string, sentAtResponse: number }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url)
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    chunk.write('{"model":"echo/echo-1","messages":[],"pad":"')
    let sent = 0
    let done = false
    const headers: Record<string, string> = { 'content-type': 'application/json', ...auth(), ...opts.headers }
    if (opts.contentLength) headers['content-length'] = String(total)
    const req = httpRequest({ host: u.hostname, port: u.port, method: 'POST', path, headers }, res => {
      const sentAtResponse = sent
      done = true
      let body = ''
      res.on('data', d => { body += d })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, sentAtResponse }))
      res.on('error', reject)
    })
    req.on('error', err => { if (!done) reject(err) })
    const pump = (): void => {
      while (!done && sent < total) {
        const n = Math.min(chunk.length, total - sent)
        sent += n
        if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) { req.once('drain', pump); return }
      }
      if (!done) req.end()
    }
    pump()
  })
}

t.test('size-limit', async t => {
  const MB = 1024 * 1024
  t.test('65 MB declared in Content-Length: 413 before the body is read; memory stays flat', async t => {
    const app = await buildTestApp({ pipeline: [{ plugin: 'size-limit' }, AUTH_ENTRY] })
    t.teardown(() => app.close())
    const url = await listen(app)
    global.gc?.()
    const before = process.memoryUsage()
    const res = await streamedPost(url, '/v1/chat/completions', 65 * MB, { contentLength: true })
    const after = process.memoryUsage()
    t.equal(res.status, 413)
    t.same(JSON.parse(res.body), { error: { code: 'request_too_large', message: `The request body exceeds the limit of ${64 * MB} bytes.` } })
    t.ok(res.sentAtResponse < 16 * MB, `refused early (${res.sentAtResponse} bytes written by then)`)
    t.ok(after.arrayBuffers - before.arrayBuffers < 16 * MB, `no 65 MB buffer (arrayBuffers grew ${after.arrayBuffers - before.arrayBuffers})`)
  })

  t.test('chunked body: reading stops as soon as it passes the limit; messages body shape', async t => {
    const app = await buildTestApp({ pipeline: [{ plugin: 'size-limit', config: { maxBytes: MB } }, AUTH_ENTRY] })
    t.teardown(() => app.close())
    const url = await listen(app)
    const res = await streamedPost(url, '/v1/messages', 65 * MB)
    t.equal(res.status, 413)
    t.same(JSON.parse(res.body), { type: 'error', error: { type: 'request_too_large', message: `The request body exceeds the limit of ${MB} bytes.` } })
    t.ok(res.sentAtResponse < 16 * MB, `stopped after about the limit, not 65 MB (${res.sentAtResponse} bytes written)`)
    const chatRes = await streamedPost(url, '/v1/chat/completions', 2 * MB)
    t.equal(chatRes.status, 413)
    t.equal(JSON.parse(chatRes.body).error.code, 'request_too_large')
  })

  t.test('a body under the limit passes; GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES lowers the server cap', async t => {
    const app = await buildTestApp({ pipeline: [{ plugin: 'size-limit' }, AUTH_ENTRY], env: { GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES: '2000' } })
    t.teardown(() => app.close())
    const small = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chat })
    t.equal(small.statusCode, 200)
    const big = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: { ...chat, pad: 'x'.repeat(3000) } })
    t.equal(big.statusCode, 413)
  })

  t.test('config accept/reject', async t => {
    await t.rejects(buildTestApp({ pipeline: [{ plugin: 'size-limit', config: { maxBytes: -1 } }] }), /size-limit/)
    await t.rejects(buildTestApp({ pipeline: [{ plugin: 'size-limit', config: { maxBytes: 'big' } }] }), /size-limit/)
    await (await buildTestApp({ pipeline: [{ plugin: 'size-limit', config: { maxBytes: 1024 } }] })).close()
  })
})

t.test('timeout', async t => {
  let up: FakeUpstream
  t.before(async () => { up = await startFakeUpstream() })
  t.teardown(() => up.close())
  const appWith = async (timeoutMs: number) => {
    const app = await buildTestApp({ pipeline: [{ plugin: 'timeout', config: { timeoutMs } }, AUTH_ENTRY], doc: upstreamDoc(up.origin, up.origin) })
    t.teardown(() => app.close())
    return app
  }

  t.test('a slow upstream gets 408 (both body shapes) and its socket is closed', async t => {
    const app = await appWith(300)
    const url = await listen(app)
    up.handle((_req, res) => {
      const timer = setTimeout(() => json(res, 200, chatCompletion('late')), 3000)
      res.on('close', () => clearTimeout(timer))
    })
    const closedBefore = up.closedSockets
    const r1 = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ ...chat, model: 'vendor/chat-model' }) })
    t.equal(r1.status, 408)
    t.same(await r1.json(), { error: { code: 408, message: 'The request timed out.' } })
    t.ok(await until(() => up.closedSockets > closedBefore), 'the upstream connection was closed')
    const r2 = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ ...msgs, model: 'vendor/chat-model' }) })
    t.equal(r2.status, 408)
    t.same(await r2.json(), { type: 'error', error: { type: 'timeout_error', message: 'The request timed out.' } })
  })

  t.test('a stream whose chunks keep coming runs past the deadline unharmed', async t => {
    const app = await appWith(800)
    const url = await listen(app)
    const pieces = Array.from({ length: 16 }, (_, i) => `w${i} `)
    up.handle((_req, res) => sse(res, chatTextStream(pieces), { delayMs: 100 })) // ~1.8 s in all, gaps of 100 ms
    const started = Date.now()
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ ...chat, model: 'vendor/chat-model', stream: true }) })
    t.equal(res.status, 200)
    const text = await res.text()
    t.ok(Date.now() - started > 800, 'the stream lasted longer than the deadline')
    t.ok(text.endsWith('data: [DONE]\n\n'), 'the stream finished normally')
    t.notMatch(text, /"error"/)
    const content = text.split('\n\n').filter(f => f.startsWith('data: {')).map(f => JSON.parse(f.slice(6)).choices?.[0]?.delta?.content ?? '').join('')
    t.equal(content, pieces.join(''))
  })

  t.test('a stream that stalls past the deadline ends with the protocol error (chat chunk; messages event)', async t => {
    const app = await appWith(300)
    const url = await listen(app)
    up.handle((_req, res) => sse(res, chatTextStream(['a', 'b', 'c', 'd']), { stallAfter: 2 }))
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ ...chat, model: 'vendor/chat-model', stream: true }) })
    t.equal(res.status, 200)
    const text = await res.text()
    t.match(text, /data: \{"error":\{[^\n]*"code":408/, 'an error chunk with code 408')
    t.notMatch(text, /\[DONE\]/)

    up.handle((_req, res) => sse(res, messagesTextStream(['a', 'b', 'c', 'd']), { stallAfter: 4 }))
    const m = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ ...msgs, model: 'msgvendor/msg-model', stream: true }) })
    t.equal(m.status, 200)
    const mt = await m.text()
    t.match(mt, /event: error\ndata: \{"type":"error","error":\{"type":"timeout_error"/)
    t.notMatch(mt, /message_stop/)
    // Stalled before any output: its opening events were still kept back (server.streamHoldMs), so
    // nothing reached the client and the deadline is the 408 in the route's body.
    up.handle((_req, res) => sse(res, messagesTextStream(['a', 'b', 'c', 'd']), { stallAfter: 3 }))
    const early = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ ...msgs, model: 'msgvendor/msg-model', stream: true }) })
    t.equal(early.status, 408)
    t.match(await early.json(), { type: 'error', error: { type: 'timeout_error' } })
    t.ok(await until(() => up.openSockets === 0), 'stalled upstream sockets closed')
  })

  t.test('config accept/reject', async t => {
    await t.rejects(buildTestApp({ pipeline: [{ plugin: 'timeout', config: { timeoutMs: 0 } }] }), /timeout/)
    await t.rejects(buildTestApp({ pipeline: [{ plugin: 'timeout', config: { timeoutMs: '1s' } }] }), /timeout/)
  })
})

t.test('media-validation', async t => {
  let up: FakeUpstream
  t.before(async () => { up = await startFakeUpstream((_req, res) => json(res, 200, chatCompletion('ok'))) })
  t.teardown(() => up.close())
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='
  const img = (url: string) => ({ type: 'image_url', image_url: { url } })
  const vid = (url: string) => ({ type: 'video_url', video_url: { url } })
  const user = (...parts: unknown[]) => [{ role: 'user', content: 'first' }, { role: 'assistant', content: 'ok' }, { role: 'user', content: [{ type: 'text', text: 'look' }, ...parts] }]
  // No DNS on test machines: the example names resolve to a public address through an injected
  // resolver (the URL policy itself is covered in media-url-policy.test.ts).
  const resolveHost = async (host: string) => host.endsWith('example.com') ? ['93.184.216.34'] : Promise.reject(Object.assign(new Error(host), { code: 'ENOTFOUND' }))

  // [name, model, messages, expected status]: negatives must never reach the upstream.
  const chatCases: Array<[string, string, unknown[], number, RegExp?]> = [
    ['image to an image model', 'vendor/chat-model', user(img('https://example.com/a.png')), 200],
    ['image data URI (png)', 'vendor/chat-model', user(img(`data:image/png;base64,${PNG}`)), 200],
    ['image to a text-only model', 'vendor/text-only', user(img('https://example.com/a.png')), 400, /messages\[2\]\.content\[1\]/],
    ['image data URI that is not an image type', 'vendor/chat-model', user(img(`data:text/plain;base64,${PNG}`)), 400, /text\/plain/],
    ['image data URI that is not base64', 'vendor/chat-model', user(img('data:image/png;base64,@@@not base64@@@')), 400, /base64/],
    ['video to a video model', 'vendor/video-model', user(vid('https://videos.example.com/v.mp4')), 200],
    ['video to an image-only model', 'vendor/chat-model', user(vid('https://videos.example.com/v.mp4')), 400, /messages\[2\]\.content\[1\]/],
    ['video data: URI', 'vendor/video-model', user(vid('data:video/mp4;base64,AAAA')), 400],
    ['video file: URL', 'vendor/video-model', user(vid('file:///etc/passwd')), 400],
    ['video blob: URL', 'vendor/video-model', user(vid('blob:https://example.com/1234')), 400],
    ['video vendor file reference', 'vendor/video-model', user(vid('gs://bucket/v.mp4')), 400],
    ['video on localhost', 'vendor/video-model', user(vid('http://localhost:8080/v.mp4')), 400],
    ['video on loopback', 'vendor/video-model', user(vid('http://127.0.0.1/v.mp4')), 400],
    ['video on a private address', 'vendor/video-model', user(vid('https://10.1.2.3/v.mp4')), 400],
    ['video on a link-local address', 'vendor/video-model', user(vid('http://169.254.169.254/latest/meta-data')), 400],
    ['video on IPv6 loopback', 'vendor/video-model', user(vid('http://[::1]/v.mp4')), 400],
  ]
  t.test('chat route', async t => {
    const app = await buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'media-validation' }], doc: upstreamDoc(up.origin, up.origin), resolveHost })
    t.teardown(() => app.close())
    for (const [name, model, messages, status, where] of chatCases) {
      const before = up.requests.length
      const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: { model, messages } })
      t.equal(res.statusCode, status, name)
      if (status === 400) {
        t.equal(up.requests.length, before, `${name}: upstream saw no request`)
        t.equal(res.json().error.code, 400, `${name}: numeric body`)
        if (where) t.match(res.json().error.message, where, `${name}: the message names the part`)
      } else t.equal(up.requests.length, before + 1, `${name}: forwarded`)
    }
  })

  t.test('messages route', async t => {
    const app = await buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'media-validation' }], doc: upstreamDoc(up.origin, up.origin), resolveHost })
    t.teardown(() => app.close())
    const block = (source: unknown) => ({ type: 'image', source })
    const cases: Array<[string, string, unknown, number]> = [
      ['image block to an image model', 'vendor/chat-model', block({ type: 'url', url: 'https://example.com/a.png' }), 200],
      ['image block to a text-only model', 'vendor/text-only', block({ type: 'base64', media_type: 'image/png', data: PNG }), 400],
      ['image block with a non-image media type', 'vendor/chat-model', block({ type: 'base64', media_type: 'application/pdf', data: PNG }), 400],
      ['video on /v1/messages', 'vendor/video-model', { type: 'video', source: { type: 'url', url: 'https://videos.example.com/v.mp4' } }, 400],
      ['video_url part on /v1/messages', 'vendor/video-model', vid('https://videos.example.com/v.mp4'), 400],
    ]
    for (const [name, model, part, status] of cases) {
      const before = up.requests.length
      const res = await app.inject({ method: 'POST', url: '/v1/messages', headers: auth(), payload: { model, max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, part] }] } })
      t.equal(res.statusCode, status, name)
      if (status === 400) {
        t.equal(up.requests.length, before, `${name}: upstream saw no request`)
        t.match(res.json(), { type: 'error', error: { type: 'invalid_request_error', message: /messages\[0\]\.content\[1\]/ } }, `${name}: messages body naming the part`)
      }
    }
  })

  t.test('config accept/reject', async t => {
    await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'media-validation', config: { nope: true } }] }), /media-validation/)
  })
})
