/**
 * Real upstream adapters against loopback fake upstreams: wire details, routing with failover and
 * circuits, error mapping, faults before and after the first byte, client aborts.
 */
import t, { type Test } from 'tap'
import { request as httpRequest } from 'node:http'
import { buildTestApp, auth, AUTH_ENTRY, listen } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, sse, chatTextStream, chatCompletion, messagesTextStream, messagesResponse, upstreamDoc, fixtureEvents, chatChunk, msgEvent, type FakeUpstream } from '../helpers/fake-upstream.ts'
import { outcomeSpy } from '../../testing.ts'
import { SseParser } from '../../core/dispatch/sse.ts'

const events = (text: string) => new SseParser().push(text).concat()
function parse (text: string) {
  const p = new SseParser()
  return [...p.push(text), ...p.end()]
}

async function setup (t: Test, extraModels: unknown[] = [], extraProviders: unknown[] = [], circuit?: { failureThreshold: number, coolDownMs: number }) {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const spy = outcomeSpy()
  const doc = upstreamDoc(chatUp.origin, msgUp.origin, extraModels)
  ;(doc.providers as unknown[]).push(...extraProviders)
  const app = await buildTestApp({ doc, pipeline: [AUTH_ENTRY, { plugin: 'outcome-spy' }], plugins: [spy.plugin], circuit })
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close() })
  return { app, chatUp, msgUp, spy }
}

const chatBody = (model: string, extra: Record<string, unknown> = {}) => ({ model, messages: [{ role: 'user', content: 'hi' }], ...extra })
const msgBody = (model: string, extra: Record<string, unknown> = {}) => ({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...extra })

t.test('openai-compatible adapter: wire details', async t => {
  const { app, chatUp, spy } = await setup(t, [
    { id: 'vendor/no-temp', supported_parameters: ['max_tokens', 'stream', 'top_p'], default_parameters: { top_p: 0.5 }, deployments: [{ provider: 'up-chat', model: 'up-nt' }] },
  ])
  chatUp.handle((req, res) => req.body.stream ? sse(res, chatTextStream(['Hel', 'lo'], { prompt: 20, completion: 2, cached: 4 })) : json(res, 200, chatCompletion('Hello', { prompt: 12, completion: 3, cached: 2 })))

  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/chat-model', { temperature: 0.3 }) })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['x-gw-provider'], 'up-chat')
  t.equal(res.headers['x-gw-model'], 'vendor/chat-model')
  t.equal(res.json().choices[0].message.content, 'Hello')
  const up = chatUp.requests.at(-1)!
  t.equal(up.path, '/v1/chat/completions')
  t.equal(up.headers.authorization, 'Bearer sk-upstream-secret')
  t.equal(up.body.model, 'up-model', 'the upstream model name replaces ours')
  t.equal(up.body.temperature, 0.3)
  await spy.settled(1)
  t.match(spy.seen[0].outcome, { upstreamSucceeded: true, provider: 'up-chat', usage: { inputTokens: 12, cachedInputTokens: 2, outputTokens: 3 }, usageEstimated: false })

  const dropped = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/no-temp', { temperature: 0.3, frequency_penalty: 1 }) })
  t.equal(dropped.statusCode, 200)
  const b = chatUp.requests.at(-1)!.body
  t.notOk('temperature' in b, 'a standard parameter the model does not list is dropped')
  t.notOk('frequency_penalty' in b)
  t.equal(b.top_p, 0.5, 'default_parameters fill what the request leaves out')

  const s = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/chat-model', { stream: true }) })
  t.equal(s.statusCode, 200)
  t.same(chatUp.requests.at(-1)!.body.stream_options, { include_usage: true }, 'usage is always asked for on streams')
  const evs = parse(s.body)
  t.equal(evs.at(-1)!.data, '[DONE]')
  t.notOk(evs.some(e => e.data.includes('"choices":[]')), 'the usage chunk is hidden from a client that did not ask')
  await spy.settled(3)
  t.match(spy.seen[2].outcome.usage, { inputTokens: 20, cachedInputTokens: 4, outputTokens: 2 }, 'usage still reaches settle')

  const su = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/chat-model', { stream: true, stream_options: { include_usage: true } }) })
  t.ok(parse(su.body).some(e => e.data.includes('"choices":[]')), 'shown to a client that asked')
})

t.test('anthropic-compatible adapter: anthropic-beta is filtered through an allow-list, item by item', async t => {
  const msgUp = await startFakeUpstream((_req, res) => json(res, 200, messagesResponse('Hi')))
  const doc = upstreamDoc(msgUp.origin, msgUp.origin, [
    { id: 'msgvendor/custom', deployments: [{ provider: 'up-msg-custom', model: 'up-model' }] },
    { id: 'msgvendor/all', deployments: [{ provider: 'up-msg-all', model: 'up-model' }] },
  ])
  ;(doc.providers as unknown[]).push(
    { name: 'up-msg-custom', adapter: 'anthropic-compatible', config: { baseUrl: msgUp.origin, allowedBetas: ['prompt-caching-2024-07-31'] } },
    { name: 'up-msg-all', adapter: 'anthropic-compatible', config: { baseUrl: msgUp.origin, allowedBetas: ['*'] } },
  )
  const app = await buildTestApp({ doc })
  t.teardown(async () => { await app.close(); await msgUp.close() })
  const url = await listen(app)
  const send = async (model: string, beta: string | undefined): Promise<string | string[] | undefined> => {
    const headers: Record<string, string> = { ...auth(), 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }
    if (beta !== undefined) headers['anthropic-beta'] = beta
    const res = await fetch(`${url}/v1/messages?beta=true`, { method: 'POST', headers, body: JSON.stringify(msgBody(model)) })
    t.equal(res.status, 200, `${model} ${beta}`)
    await res.text()
    return msgUp.requests.at(-1)!.headers['anthropic-beta']
  }
  t.equal(await send('msgvendor/msg-model', 'context-1m-2025-08-07'), undefined, 'a beta priced above the configured price is dropped')
  t.equal(await send('msgvendor/msg-model', 'claude-code-20250219'), 'claude-code-20250219', 'a default beta is forwarded')
  t.equal(await send('msgvendor/msg-model', 'context-1m-2025-08-07, interleaved-thinking-2025-05-14 ,web-search-2025-03-05,context-management-2025-06-27'), 'interleaved-thinking-2025-05-14,context-management-2025-06-27', 'a list is filtered item by item')
  t.equal(await send('msgvendor/msg-model', undefined), undefined, 'no header, none sent')
  t.equal(await send('msgvendor/custom', 'claude-code-20250219,prompt-caching-2024-07-31'), 'prompt-caching-2024-07-31', 'per provider allow-list')
  t.equal(await send('msgvendor/all', 'context-1m-2025-08-07,x-y'), 'context-1m-2025-08-07,x-y', '"*" forwards every beta')
  await t.rejects(buildTestApp({ doc: { ...doc, providers: [{ name: 'bad', adapter: 'anthropic-compatible', config: { allowedBetas: 'all' } }], models: [] } }), /allowedBetas/)
})

t.test('anthropic-compatible adapter: wire details', async t => {
  const { app, msgUp, spy } = await setup(t)
  msgUp.handle((req, res) => req.body.stream ? sse(res, messagesTextStream(['a', 'b'], { input: 5, output: 2, cacheRead: 7, cacheWrite: 3 })) : json(res, 200, messagesResponse('Hi')))
  const res = await app.inject({ method: 'POST', url: '/v1/messages?beta=true', headers: { ...auth(), 'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14', 'anthropic-version': '2023-06-01' }, payload: msgBody('msgvendor/msg-model') })
  t.equal(res.statusCode, 200)
  t.equal(res.json().content[0].text, 'Hi')
  const up = msgUp.requests.at(-1)!
  t.equal(up.path, '/v1/messages')
  t.equal(up.headers['x-api-key'], 'sk-ant-upstream-secret')
  t.equal(up.headers['anthropic-version'], '2023-06-01')
  t.equal(up.headers['anthropic-beta'], 'claude-code-20250219,interleaved-thinking-2025-05-14', 'allowed betas are forwarded')
  t.notOk(up.headers.authorization, 'the client key never goes upstream')
  const s = await app.inject({ method: 'POST', url: '/v1/messages', headers: auth(), payload: msgBody('msgvendor/msg-model', { stream: true }) })
  const evs = parse(s.body)
  t.ok(evs.every(e => e.event), 'every event keeps its event: line')
  t.equal(evs.at(-1)!.event, 'message_stop')
  await spy.settled(2)
  t.match(spy.seen[1].outcome.usage, { inputTokens: 15, cachedInputTokens: 7, cacheWriteTokens: 3, outputTokens: 2 })
})

t.test('cross-protocol through real adapters, streaming with tools', async t => {
  const { app, chatUp, msgUp, spy } = await setup(t)
  chatUp.handle((_req, res) => sse(res, fixtureEvents('chat-parallel-tools.sse')))
  msgUp.handle((_req, res) => sse(res, fixtureEvents('messages-tool-use.sse')))

  const m = await app.inject({ method: 'POST', url: '/v1/messages', headers: auth(), payload: msgBody('vendor/chat-model', { stream: true, tools: [{ name: 'get_weather', input_schema: { type: 'object' } }] }) })
  t.equal(m.statusCode, 200)
  const me = parse(m.body)
  t.same(me.map(e => e.event), [
    'message_start', 'content_block_start', 'content_block_delta', 'content_block_stop',
    'content_block_start', 'content_block_delta', 'content_block_stop',
    'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop',
  ])
  const starts = me.filter(e => e.event === 'content_block_start').map(e => JSON.parse(e.data))
  t.same(starts.map(s => s.index), [0, 1, 2], 'block indexes run in order')
  t.match(starts[1].content_block, { type: 'tool_use', id: 'call_a1', name: 'get_weather' })
  const deltas = me.filter(e => e.event === 'content_block_delta').map(e => JSON.parse(e.data))
  t.same(JSON.parse(deltas[1].delta.partial_json), { city: 'Oslo' }, 'interleaved fragments land in their own block')
  t.same(JSON.parse(deltas[2].delta.partial_json), { tz: 'CET' })
  const md = JSON.parse(me.find(e => e.event === 'message_delta')!.data)
  t.same(md.delta, { stop_reason: 'tool_use', stop_sequence: null })
  t.same(md.usage, { input_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 100, output_tokens: 30 })
  const upBody = chatUp.requests.at(-1)!.body
  t.same(upBody.tools, [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }])
  t.same(upBody.stream_options, { include_usage: true })

  const c = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('msgvendor/msg-model', { stream: true, stream_options: { include_usage: true } }) })
  const ce = parse(c.body)
  t.equal(ce.at(-1)!.data, '[DONE]')
  const chunks = ce.slice(0, -1).map(e => JSON.parse(e.data))
  t.same(chunks[0].choices[0].delta, { role: 'assistant', content: '' })
  t.ok(chunks.every(ch => ch.id === chunks[0].id && ch.model === 'msgvendor/msg-model'))
  t.equal(chunks.map(ch => ch.choices[0]?.delta?.content ?? '').join(''), 'Looking it up.', 'thinking never leaks into content')
  const toolChunks = chunks.filter(ch => ch.choices[0]?.delta?.tool_calls)
  t.match(toolChunks[0].choices[0].delta.tool_calls[0], { index: 0, id: 'toolu_01B', type: 'function', function: { name: 'get_weather', arguments: '' } })
  t.equal(toolChunks.slice(1).map(ch => ch.choices[0].delta.tool_calls[0].function.arguments).join(''), '{"city":"Oslo"}')
  t.equal(chunks.at(-2).choices[0].finish_reason, 'tool_calls')
  t.same(chunks.at(-1).choices, [])
  t.same(chunks.at(-1).usage, { prompt_tokens: 130, completion_tokens: 40, total_tokens: 170, prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 10 } }, 'prompt_tokens = input + cache read + cache write')
  await spy.settled(2)
  t.match(spy.seen[1].outcome.usage, { inputTokens: 130, cachedInputTokens: 100, outputTokens: 40 })
})

t.test('failover and circuits', async t => {
  const dead = 'http://127.0.0.1:9' // discard port: connection refused
  const { app, chatUp } = await setup(t, [
    { id: 'vendor/ha', deployments: [{ provider: 'dead', model: 'x', priority: 0 }, { provider: 'up-chat', model: 'up-ha', priority: 1 }] },
    { id: 'vendor/all-dead', deployments: [{ provider: 'dead', model: 'y' }] },
  ], [{ name: 'dead', adapter: 'openai-compatible', config: { baseUrl: `${dead}/v1` } }], { failureThreshold: 2, coolDownMs: 60_000 })
  chatUp.handle((_req, res) => json(res, 200, chatCompletion('from the backup')))
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/ha') })
    t.equal(res.statusCode, 200)
    t.equal(res.headers['x-gw-provider'], 'up-chat', 'X-GW-Provider names the provider that answered')
    t.equal(res.json().choices[0].message.content, 'from the backup')
  }
  const r1 = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/all-dead') })
  t.equal(r1.statusCode, 502, 'upstreams failed: 502')
  t.equal(r1.json().error.code, 502)
  const r2 = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/all-dead') })
  const r3 = await app.inject({ method: 'POST', url: '/v1/messages', headers: auth(), payload: msgBody('vendor/all-dead') })
  t.equal(r3.statusCode, 503, 'circuit open, nothing available: 503')
  t.equal(r3.json().error.type, 'overloaded_error')
  t.ok([502, 503].includes(r2.statusCode))
})

t.test('upstream errors are mapped, never shown', async t => {
  const { app, chatUp, msgUp } = await setup(t)
  const cases: [number, unknown, Record<string, string>, number][] = [
    [500, { error: { message: 'internal stack at http://10.0.0.5:8000/secret' } }, {}, 502],
    [429, { error: { message: 'slow down' } }, { 'retry-after': '7' }, 503],
    [529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, {}, 503],
    [401, { error: { message: 'bad provider key sk-upstream-secret' } }, {}, 502],
    [400, { error: { message: 'messages too long; see https://vendor.example/docs key sk-abcdefghijkl' } }, {}, 400],
  ]
  for (const [status, body, headers, want] of cases) {
    chatUp.handle((_req, res) => json(res, status, body, headers))
    msgUp.handle((_req, res) => json(res, status, body, headers))
    for (const [url, model] of [['/v1/chat/completions', 'vendor/chat-model'], ['/v1/messages', 'msgvendor/msg-model'], ['/v1/messages', 'vendor/chat-model']]) {
      const res = await app.inject({ method: 'POST', url, headers: auth(), payload: url.includes('messages') ? msgBody(model) : chatBody(model) })
      t.equal(res.statusCode, want, `${status} from upstream → ${want} (${url} ${model})`)
      t.match(res.headers['content-type'], /application\/json/)
      t.notMatch(res.body, /10\.0\.0\.5|sk-upstream-secret|vendor\.example|sk-abcdefghijkl|stack/, 'upstream internals stay out')
      if (status === 429) t.equal(res.headers['retry-after'], '7')
      if (url === '/v1/messages') t.equal(res.json().type, 'error')
      else t.equal(res.json().error.code, want)
    }
  }
  chatUp.handle((_req, res) => json(res, 200, '<html>gateway error</html>'))
  const html = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/chat-model') })
  t.equal(html.statusCode, 502, '2xx with a body that is not JSON → 502')
})

t.test('a stream that breaks after the first byte ends with the protocol error; usage settles once', async t => {
  const { app, chatUp, msgUp, spy } = await setup(t)
  chatUp.handle((_req, res) => sse(res, chatTextStream(['one ', 'two ', 'three ', 'four']), { cutAfter: 3, delayMs: 30 }))
  // Cut after their first output: a stream that fails before any fails over instead (test/integration/stream-first-output.test.ts).
  msgUp.handle((_req, res) => sse(res, messagesTextStream(['one ', 'two ', 'three ']), { cutAfter: 5, delayMs: 30 }))
  const c = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/chat-model', { stream: true }) })
  t.equal(c.statusCode, 200, c.body)
  const ce = parse(c.body)
  t.match(JSON.parse(ce.at(-1)!.data), { error: { message: String } }, 'chat: an error chunk, then close')
  t.notOk(ce.some(e => e.data === '[DONE]'))
  const m = await app.inject({ method: 'POST', url: '/v1/messages', headers: auth(), payload: msgBody('msgvendor/msg-model', { stream: true }) })
  const me = parse(m.body)
  t.equal(me.at(-1)!.event, 'error')
  t.match(JSON.parse(me.at(-1)!.data), { type: 'error', error: { type: 'api_error' } })
  const x = await app.inject({ method: 'POST', url: '/v1/messages', headers: auth(), payload: msgBody('vendor/chat-model', { stream: true }) })
  const xe = parse(x.body)
  t.equal(xe[0].event, 'message_start')
  t.equal(xe.at(-1)!.event, 'error', 'translated stream: error event too')
  await spy.settled(3)
  t.equal(spy.seen.length, 3, 'one settle per call')
  for (const s of spy.seen) {
    t.equal(s.outcome.upstreamSucceeded, true)
    t.ok(s.outcome.usage, 'usage so far reaches settle')
    t.equal(s.outcome.error?.code, 'GW_ERR_UPSTREAM_FAILED')
  }
})

t.test('an error body answered with 2xx is the upstream\'s error: mapped, failed over, never relayed or billed', async t => {
  // A circuit that stays closed: every case below reaches its upstream.
  const { app, chatUp, msgUp, spy } = await setup(t, [
    { id: 'vendor/ha-2xx', deployments: [{ provider: 'up-chat', model: 'c', priority: 0 }, { provider: 'up-msg', model: 'm', priority: 1 }] },
  ], [], { failureThreshold: 1000, coolDownMs: 1 })
  // [error body from the chat upstream, the status a client of it gets, the same for the messages upstream]
  const cases: [unknown, number, unknown, number][] = [
    [{ error: { message: 'You exceeded your current quota', type: 'insufficient_quota', code: 'insufficient_quota' } }, 503, { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } }, 503],
    [{ error: { message: 'boom', type: 'server_error' } }, 502, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 503],
    [{ error: { code: 429, message: 'Resource exhausted', status: 'RESOURCE_EXHAUSTED' } }, 503, { type: 'error', error: { type: 'api_error', message: 'x' } }, 502],
    [{ error: 'upstream exploded at http://10.0.0.5/secret' }, 502, { type: 'error', error: 'no' }, 502],
    [{ error: { message: 'bad key sk-upstream-secret', type: 'authentication_error' } }, 502, { type: 'error', error: { type: 'permission_error', message: 'no' } }, 502],
  ]
  let seen = 0
  for (const [chatErr, chatWant, msgErr, msgWant] of cases) {
    chatUp.handle((_req, res) => json(res, 200, chatErr))
    msgUp.handle((_req, res) => json(res, 200, msgErr))
    for (const stream of [false, true]) {
      for (const [url, model] of [['/v1/chat/completions', 'vendor/chat-model'], ['/v1/messages', 'msgvendor/msg-model'], ['/v1/messages', 'vendor/chat-model'], ['/v1/chat/completions', 'msgvendor/msg-model'], ['/v1/responses', 'vendor/chat-model']]) {
        const payload = url === '/v1/responses' ? { model, input: 'hi', stream } : url === '/v1/messages' ? msgBody(model, { stream }) : chatBody(model, { stream })
        const res = await app.inject({ method: 'POST', url, headers: auth(), payload })
        const what = `${JSON.stringify(model.startsWith('msgvendor') ? msgErr : chatErr).slice(0, 50)} ${url} ${model} stream=${stream}`
        const want = model.startsWith('msgvendor') ? msgWant : chatWant
        t.equal(res.statusCode, want, what)
        t.match(res.headers['content-type'], /application\/json/, what)
        t.notMatch(res.body, /10\.0\.0\.5|sk-upstream-secret|exceeded your current quota/, `upstream internals stay out: ${what}`)
        if (url === '/v1/messages') t.equal(res.json().type, 'error', what)
        else t.equal(res.json().error.code, want, what)
        seen++
      }
    }
  }
  await spy.settled(seen)
  t.equal(spy.seen.length, seen)
  for (const s of spy.seen) {
    t.equal(s.outcome.usage, undefined, 'nothing billed for an error body')
    t.equal(s.outcome.upstreamSucceeded, false)
  }

  // A refusal of the request itself is final (400, the upstream's message sanitized), as a 400 status is.
  chatUp.handle((_req, res) => json(res, 200, { error: { message: 'messages too long; see https://vendor.example/docs', type: 'invalid_request_error' } }))
  const bad = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/ha-2xx') })
  t.equal(bad.statusCode, 400)
  t.match(bad.json().error.message, /messages too long/)
  t.notMatch(bad.body, /vendor\.example/)
  t.equal(msgUp.requests.filter(r => r.body.model === 'm').length, 0, 'a final refusal is not failed over')

  // Any other error body fails over to the next deployment, which answers.
  chatUp.handle((_req, res) => json(res, 200, { error: { message: 'busy', type: 'server_error' } }))
  msgUp.handle((_req, res) => json(res, 200, messagesResponse('from the second')))
  const over = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/ha-2xx') })
  t.equal(over.statusCode, 200)
  t.equal(over.headers['x-gw-provider'], 'up-msg')
  t.equal(over.json().choices[0].message.content, 'from the second')

  // An answer that carries an `error` member beside its answer is an answer.
  chatUp.handle((_req, res) => json(res, 200, { ...(chatCompletion('fine', { prompt: 5, completion: 1, cached: 0 }) as Record<string, unknown>), error: null }))
  const fine = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/chat-model') })
  t.equal(fine.statusCode, 200)
  t.equal(fine.json().choices[0].message.content, 'fine')
  chatUp.handle((_req, res) => json(res, 200, { ...(chatCompletion('also fine', { prompt: 5, completion: 1, cached: 0 }) as Record<string, unknown>), error: { message: 'a warning' } }))
  const warned = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/chat-model') })
  t.equal(warned.statusCode, 200)
  t.equal(warned.json().choices[0].message.content, 'also fine')
})

t.test('an upstream that fails before answering fails over to the next deployment', async t => {
  const { app, chatUp } = await setup(t, [
    { id: 'vendor/ha2', deployments: [{ provider: 'up-msg', model: 'm', priority: 0 }, { provider: 'up-chat', model: 'c', priority: 1 }] },
  ])
  const { msgUp } = { msgUp: undefined as unknown as FakeUpstream }
  void msgUp
  chatUp.handle((_req, res) => sse(res, chatTextStream(['ok'])))
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chatBody('vendor/ha2', { stream: true }) })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['x-gw-provider'], 'up-chat')
})

t.test('a client that disconnects aborts the upstream call at once', async t => {
  const { app, chatUp, spy } = await setup(t)
  const pieces = Array.from({ length: 100 }, (_, i) => `w${i} `)
  chatUp.handle((_req, res) => sse(res, chatTextStream(pieces), { delayMs: 50 }))
  const base = await listen(app)
  await new Promise<void>((resolve, reject) => {
    const req = httpRequest(`${base}/v1/chat/completions`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' } }, res => {
      res.once('data', () => { req.destroy(); resolve() })
    })
    req.on('error', () => {})
    req.setTimeout(5000, () => reject(new Error('no data')))
    req.end(JSON.stringify(chatBody('vendor/chat-model', { stream: true })))
  })
  const end = Date.now() + 3000
  while (chatUp.openSockets > 0 && Date.now() < end) await new Promise(r => setTimeout(r, 20))
  t.equal(chatUp.openSockets, 0, 'the upstream connection was closed')
  await spy.settled(1)
  t.equal(spy.seen.length, 1)
  t.equal(spy.seen[0].outcome.clientAborted, true)
  t.ok(spy.seen[0].outcome.usage, 'an abandoned stream is still billed (estimated)')
})

void events; void chatChunk; void msgEvent
