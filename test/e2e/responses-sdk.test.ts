/**
 * POST /v1/responses with the official OpenAI SDK against a listening gateway, over loopback fake
 * upstreams of both kinds (chat completions and messages): create, parse, stream, tool round
 * trips (plain and namespaced), the stateless refusals, errors before and after the first byte,
 * and billing (usage record, balance, a cut stream estimated).
 */
import t, { type Test } from 'tap'
import OpenAI from 'openai'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, sse, chatChunk, chatUsageChunk, chatTextStream, chatCompletion, messagesTextStream, messagesResponse, msgEvent, DONE, type FakeUpstream } from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { until } from '../helpers/until.ts'

const ORG = 'org-test'
interface Kind { name: 'chat' | 'messages', model: string }
const KINDS: Kind[] = [{ name: 'chat', model: 'vendor/chat-model' }, { name: 'messages', model: 'msgvendor/msg-model' }]

async function setup (t: Test) {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, 1_000_000_000)
  const app = await buildTestApp({ ledger, doc: upstreamDoc(chatUp.origin, msgUp.origin), pipeline: [AUTH_ENTRY, { plugin: 'balance' }] })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close(); await ledger.close() })
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const upFor = (k: Kind): FakeUpstream => k.name === 'chat' ? chatUp : msgUp
  return { url, client, ledger, upFor }
}

/** The upstream's answer: a tool call of `name` with `args`, JSON or streamed. */
function toolAnswer (k: Kind, name: string, args: Record<string, unknown>, stream: boolean): { json?: unknown, events?: string[] } {
  const a = JSON.stringify(args)
  if (k.name === 'chat') {
    if (!stream) {
      return { json: { id: 'chatcmpl-t1', object: 'chat.completion', created: 1, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name, arguments: a } }] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 30, completion_tokens: 5, total_tokens: 35 } } }
    }
    return {
      events: [
        chatChunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name, arguments: '' } }] }),
        chatChunk({ tool_calls: [{ index: 0, function: { arguments: a.slice(0, 5) } }] }),
        chatChunk({ tool_calls: [{ index: 0, function: { arguments: a.slice(5) } }] }),
        chatChunk({}, 'tool_calls'),
        chatUsageChunk(30, 5),
        DONE,
      ],
    }
  }
  if (!stream) {
    return { json: { id: 'msg_t1', type: 'message', role: 'assistant', model: 'up', content: [{ type: 'tool_use', id: 'toolu_1', name, input: args }], stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 30, output_tokens: 5 } } }
  }
  return {
    events: [
      msgEvent('message_start', { message: { id: 'msg_t1', type: 'message', role: 'assistant', model: 'up', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 30, output_tokens: 1 } } }),
      msgEvent('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name, input: {} } }),
      msgEvent('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: a.slice(0, 5) } }),
      msgEvent('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: a.slice(5) } }),
      msgEvent('content_block_stop', { index: 0 }),
      msgEvent('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 5 } }),
      msgEvent('message_stop', {}),
    ],
  }
}

function answerWith (up: FakeUpstream, a: { json?: unknown, events?: string[] }): void {
  up.handle((_req, res) => a.events ? sse(res, a.events) : json(res, 200, a.json))
}

/** Tool calls and tool results as the upstream received them, in its own protocol. */
function upstreamToolNames (k: Kind, body: any): string[] {
  return (body.tools ?? []).map((x: { function: { name: string }, name: string }) => k.name === 'chat' ? x.function.name : x.name)
}

async function recordOf (t: Test, ledger: Ledger, id: string | null): Promise<UsageRecord> {
  const find = async () => (await ledger.listUsage({})).find(r => r.traceId === id)
  t.ok(await until(async () => (await find()) !== undefined), 'a usage record was written')
  return (await find())!
}

t.test('responses.create: text, instructions and usage, on both upstream kinds', async t => {
  const { client, upFor } = await setup(t)
  for (const k of KINDS) {
    t.test(k.name, async t => {
      const up = upFor(k)
      up.handle((_req, res) => json(res, 200, k.name === 'chat' ? chatCompletion('Hello there', { prompt: 12, completion: 3, cached: 4 }) : messagesResponse('Hello there', { input: 8, output: 3, cacheRead: 4, cacheWrite: 0 })))
      const r = await client.responses.create({ model: k.model, instructions: 'Be brief.', input: 'Say hello', max_output_tokens: 100, temperature: 0.5, store: false, include: ['reasoning.encrypted_content'] })
      t.equal(r.object, 'response')
      t.match(r.id, /^resp_/)
      t.equal(r.status, 'completed')
      t.equal(r.model, k.model)
      t.equal(r.output_text, 'Hello there')
      t.match(r.output, [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello there' }] }])
      t.match(r.usage, { input_tokens: 12, input_tokens_details: { cached_tokens: 4 }, output_tokens: 3, total_tokens: 15 })
      const sent = up.requests.at(-1)!.body
      if (k.name === 'chat') {
        t.match(sent.messages, [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello' }])
        t.equal(sent.max_tokens, 100)
        t.equal(sent.temperature, 0.5)
      } else {
        t.equal(sent.system, 'Be brief.')
        t.match(sent.messages, [{ role: 'user', content: 'Say hello' }])
        t.equal(sent.max_tokens, 100)
      }
      t.notOk('include' in sent, 'include is not sent upstream')
      t.notOk('store' in sent, 'store is not sent upstream')
    })
  }
})

t.test('a function tool round trip with function_call_output', async t => {
  const { client, upFor } = await setup(t)
  const tools = [{ type: 'function' as const, name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }]
  for (const k of KINDS) {
    t.test(k.name, async t => {
      const up = upFor(k)
      answerWith(up, toolAnswer(k, 'get_weather', { city: 'Oslo' }, false))
      const first = await client.responses.create({ model: k.model, input: [{ role: 'user', content: [{ type: 'input_text', text: 'Weather in Oslo?' }] }], tools, tool_choice: 'auto', parallel_tool_calls: false })
      const call = first.output.find(o => o.type === 'function_call')
      t.ok(call, 'a function_call item')
      if (call?.type !== 'function_call') return
      t.equal(call.name, 'get_weather')
      t.same(JSON.parse(call.arguments), { city: 'Oslo' })
      t.ok(call.call_id)
      t.same(upstreamToolNames(k, up.requests.at(-1)!.body), ['get_weather'])
      up.handle((_req, res) => json(res, 200, k.name === 'chat' ? chatCompletion('It is sunny.') : messagesResponse('It is sunny.')))
      const second = await client.responses.create({
        model: k.model, tools,
        input: [
          { role: 'user', content: [{ type: 'input_text', text: 'Weather in Oslo?' }] },
          ...first.output as any[],
          { type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21 C' },
        ],
      })
      t.equal(second.output_text, 'It is sunny.')
      const sent = up.requests.at(-1)!.body
      if (k.name === 'chat') {
        t.match(sent.messages, [
          { role: 'user', content: 'Weather in Oslo?' },
          { role: 'assistant', tool_calls: [{ id: call.call_id, function: { name: 'get_weather' } }] },
          { role: 'tool', tool_call_id: call.call_id, content: 'sunny, 21 C' },
        ])
        t.equal(sent.parallel_tool_calls, undefined, 'the second call did not ask')
      } else {
        t.match(sent.messages, [
          { role: 'user' },
          { role: 'assistant', content: [{ type: 'tool_use', id: call.call_id, name: 'get_weather', input: { city: 'Oslo' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.call_id, content: 'sunny, 21 C' }] },
        ])
      }
    })
  }
})

t.test('namespace tools reach the upstream as ns__fn and come back under their namespace; built-in tools dropped', async t => {
  const { client, upFor } = await setup(t)
  const tools: any[] = [
    { type: 'namespace', name: 'crm', description: 'Customer records', tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } }] },
    { type: 'function', name: 'shell', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } },
    { type: 'web_search' },
  ]
  for (const k of KINDS) {
    for (const stream of [false, true]) {
      t.test(`${k.name}${stream ? ', streamed' : ''}`, async t => {
        const up = upFor(k)
        answerWith(up, toolAnswer(k, 'crm__lookup', { q: 'ACME' }, stream))
        const params: any = { model: k.model, input: 'find ACME', tools, client_metadata: { session: 's1' }, prompt_cache_key: 'pk-1' }
        const first = stream
          ? await client.responses.stream(params, { headers: { 'x-codex-turn-metadata': '{}' } }).finalResponse()
          : await client.responses.create(params, { headers: { 'x-codex-turn-metadata': '{}' } })
        t.same(upstreamToolNames(k, up.requests.at(-1)!.body), ['crm__lookup', 'shell'], 'namespaced members flattened, web_search dropped')
        const call = first.output.find(o => o.type === 'function_call') as any
        t.match(call, { type: 'function_call', name: 'lookup', namespace: 'crm' })
        t.same(JSON.parse(call.arguments), { q: 'ACME' })
        up.handle((_req, res) => json(res, 200, k.name === 'chat' ? chatCompletion('Found.') : messagesResponse('Found.')))
        const second = await client.responses.create({ model: k.model, tools, input: ['find ACME' as any].map(text => ({ role: 'user', content: text })).concat([call, { type: 'function_call_output', call_id: call.call_id, output: 'ACME Corp' }]) } as any)
        t.equal(second.output_text, 'Found.')
        const sent = up.requests.at(-1)!.body
        const names = k.name === 'chat'
          ? sent.messages.flatMap((m: { tool_calls?: { function: { name: string } }[] }) => (m.tool_calls ?? []).map((c: { function: { name: string } }) => c.function.name))
          : sent.messages.flatMap((m: { content: string | { type: string, name: string }[] }) => Array.isArray(m.content) ? m.content.filter((b: { type: string, name: string }) => b.type === 'tool_use').map((b: { name: string }) => b.name) : [])
        t.same(names, ['crm__lookup'], 'the call given back went upstream under its flat name')
      })
    }
  }
})

t.test('responses.parse with a json_schema text format', async t => {
  const { client, upFor } = await setup(t)
  const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }
  for (const k of KINDS) {
    t.test(k.name, async t => {
      const up = upFor(k)
      up.handle((_req, res) => json(res, 200, k.name === 'chat' ? chatCompletion('{"city":"Oslo"}') : messagesResponse('{"city":"Oslo"}')))
      const r = await client.responses.parse({ model: k.model, input: 'Where?', text: { format: { type: 'json_schema', name: 'place', schema, strict: true } } })
      t.same(r.output_parsed, { city: 'Oslo' })
      const sent = up.requests.at(-1)!.body
      if (k.name === 'chat') t.match(sent.response_format, { type: 'json_schema', json_schema: { name: 'place', schema, strict: true } })
      else t.match(sent.output_config, { format: { type: 'json_schema', schema } })
    })
  }
})

t.test('responses.stream: text and tool calls, events in order, the final response', async t => {
  const { client, upFor } = await setup(t)
  for (const k of KINDS) {
    t.test(`${k.name}: text`, async t => {
      const up = upFor(k)
      up.handle((_req, res) => sse(res, k.name === 'chat' ? chatTextStream(['Hel', 'lo'], { prompt: 9, completion: 2, cached: 0 }) : messagesTextStream(['Hel', 'lo'], { input: 9, output: 2, cacheRead: 0, cacheWrite: 0 })))
      const stream = client.responses.stream({ model: k.model, input: 'hi' })
      const types: string[] = []
      const seqs: number[] = []
      stream.on('event', e => { types.push(e.type); seqs.push(e.sequence_number) })
      const final = await stream.finalResponse()
      t.same(types, [
        'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
        'response.output_text.delta', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done',
        'response.output_item.done', 'response.completed',
      ])
      t.same(seqs, seqs.map((_, i) => i), 'sequence_number counts from 0')
      t.equal(final.status, 'completed')
      t.equal(final.output_text, 'Hello')
      t.match(final.usage, { input_tokens: 9, output_tokens: 2 })
      t.ok(up.requests.at(-1)!.body.stream, 'the upstream was asked to stream')
    })
    t.test(`${k.name}: tool call`, async t => {
      const up = upFor(k)
      answerWith(up, toolAnswer(k, 'get_weather', { city: 'Oslo' }, true))
      const stream = client.responses.stream({ model: k.model, input: 'weather?', tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }] })
      const types: string[] = []
      let argsDone = ''
      stream.on('event', e => { types.push(e.type); if (e.type === 'response.function_call_arguments.done') argsDone = e.arguments })
      const final = await stream.finalResponse()
      t.same(types.filter(x => x !== 'response.function_call_arguments.delta'), [
        'response.created', 'response.in_progress', 'response.output_item.added',
        'response.function_call_arguments.done', 'response.output_item.done', 'response.completed',
      ])
      t.ok(types.includes('response.function_call_arguments.delta'))
      t.same(JSON.parse(argsDone), { city: 'Oslo' })
      t.match(final.output, [{ type: 'function_call', name: 'get_weather', status: 'completed' }])
      t.match(final.usage, { input_tokens: 30, output_tokens: 5 })
    })
  }
})

t.test('errors: 401, stateless 400 and 404, upstream errors before and after the first byte', async t => {
  const { url, client, upFor } = await setup(t)
  const bad = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-gw-wrong', maxRetries: 0 })
  const e401 = await bad.responses.create({ model: 'vendor/chat-model', input: 'hi' }).catch(e => e)
  t.ok(e401 instanceof OpenAI.AuthenticationError, '401 is an AuthenticationError')
  t.equal(e401.status, 401)
  t.ok(e401.requestID, 'x-request-id read by the SDK')

  const e400 = await client.responses.create({ model: 'vendor/chat-model', input: 'hi', previous_response_id: 'resp_abc' }).catch(e => e)
  t.ok(e400 instanceof OpenAI.BadRequestError)
  t.match(e400.message, /previous_response_id.*stateless/)
  const conv = await client.responses.create({ model: 'vendor/chat-model', input: 'hi', conversation: 'conv_1' }).catch(e => e)
  t.equal(conv.status, 400)
  t.match(conv.message, /conversation.*stateless/)
  const shape = await fetch(`${url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json', 'x-locale': 'zh-CN' }, body: JSON.stringify({ model: 'vendor/chat-model', input: 42 }) })
  t.equal(shape.status, 400)
  t.match(await shape.json(), { error: { code: 400, message: /^请求无效/ } }, 'the OpenAI-style error body, localized')

  const e404 = await client.responses.retrieve('resp_abc').catch(e => e)
  t.ok(e404 instanceof OpenAI.NotFoundError)
  t.match(e404.message, /resp_abc.*stateless/)
  const del = await client.responses.delete('resp_abc').catch(e => e)
  t.equal(del.status, 404)

  for (const k of KINDS) {
    t.test(`${k.name}: an upstream 500 before the first byte is a 502`, async t => {
      upFor(k).handle((_req, res) => json(res, 500, { error: { message: 'boom' } }))
      const e = await client.responses.create({ model: k.model, input: 'hi' }).catch(e => e)
      t.ok(e instanceof OpenAI.APIError)
      t.equal(e.status, 502)
      const s = await (async () => { for await (const _ of await client.responses.create({ model: k.model, input: 'hi', stream: true })) { /* none */ } })().catch(e => e)
      t.equal(s.status, 502, 'streamed: still an HTTP error before the first byte')
    })
    t.test(`${k.name}: an upstream error after the first byte ends with response.failed and error`, async t => {
      const events = k.name === 'chat'
        ? [...chatTextStream(['Hel', 'lo']).slice(0, 3), `data: ${JSON.stringify({ error: { message: 'overloaded', type: 'server_error', code: 503 } })}\n\n`]
        : [...messagesTextStream(['Hel', 'lo']).slice(0, 5), msgEvent('error', { error: { type: 'overloaded_error', message: 'Overloaded' } })]
      upFor(k).handle((_req, res) => sse(res, events))
      const types: string[] = []
      const err = await (async () => {
        for await (const e of await client.responses.create({ model: k.model, input: 'hi', stream: true })) types.push(e.type)
      })().catch(e => e)
      t.ok(err instanceof OpenAI.APIError, 'the SDK throws on the error event')
      t.match(err.message, /overloaded/i)
      t.same(types.slice(0, 3), ['response.created', 'response.in_progress', 'response.output_item.added'])
      t.equal(types.at(-1), 'response.failed')
    })
  }
})

t.test('billing: a usage record and the balance after calls in flight at once; a cut stream estimated', async t => {
  const { client, ledger, upFor } = await setup(t)
  for (const k of KINDS) {
    t.test(k.name, async t => {
      const up = upFor(k)
      up.handle((_req, res) => json(res, 200, k.name === 'chat' ? chatCompletion('ok', { prompt: 100, completion: 50, cached: 0 }) : messagesResponse('ok', { input: 100, output: 50, cacheRead: 0, cacheWrite: 0 })))
      const before = (await ledger.getBalance(ORG))!.balance
      const N = 8
      const results = await Promise.all(Array.from({ length: N }, () => client.responses.create({ model: k.model, input: 'bill me' }).withResponse()))
      for (const { response } of results) {
        const rec = await recordOf(t, ledger, response.headers.get('x-gw-trace-id'))
        t.match(rec, { model: k.model, inputTokens: 100, outputTokens: 50, estimated: false, cost: 100 * 1 + 50 * 2 })
      }
      t.ok(await until(async () => (await ledger.getBalance(ORG))!.balance === before - N * 200 && (await ledger.getBalance(ORG))!.reserved === 0), 'the balance went down by the cost of every call, nothing held')

      const pieces = Array.from({ length: 60 }, () => 'abcd')
      const events = k.name === 'chat' ? chatTextStream(pieces) : messagesTextStream(pieces)
      up.handle((_req, res) => sse(res, events, { cutAfter: (k.name === 'chat' ? 1 : 3) + 20, delayMs: 2 }))
      const { data: stream, response } = await client.responses.create({ model: k.model, input: 'long story', stream: true }).withResponse()
      let text = ''
      const err = await (async () => { for await (const e of stream) if (e.type === 'response.output_text.delta') text += e.delta })().catch(e => e)
      t.ok(err instanceof OpenAI.APIError, 'the cut ends the stream with an error event')
      const rec = await recordOf(t, ledger, response.headers.get('x-gw-trace-id'))
      t.equal(rec.estimated, true, 'a cut stream is billed on the estimate')
      t.equal(rec.outputTokens, text.length / 4, 'output = the relayed characters ÷ 4')
    })
  }
})

t.test('media validation reads Responses input items', async t => {
  const chatUp = await startFakeUpstream((_req, res) => json(res, 200, chatCompletion('seen')))
  const msgUp = await startFakeUpstream()
  const app = await buildTestApp({ doc: upstreamDoc(chatUp.origin, msgUp.origin), pipeline: [AUTH_ENTRY, { plugin: 'media-validation' }] })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close() })
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const png = 'data:image/png;base64,iVBORw0KGgo='
  const image = (image_url: string) => [{ role: 'user' as const, content: [{ type: 'input_text' as const, text: 'what?' }, { type: 'input_image' as const, image_url, detail: 'auto' as const }] }]
  const ok = await client.responses.create({ model: 'vendor/chat-model', input: image(png) })
  t.equal(ok.output_text, 'seen')
  t.match(chatUp.requests.at(-1)!.body.messages, [{ role: 'user', content: [{ type: 'text', text: 'what?' }, { type: 'image_url', image_url: { url: png } }] }])
  const textOnly = await client.responses.create({ model: 'vendor/text-only', input: image(png) }).catch(e => e)
  t.equal(textOnly.status, 400)
  t.match(textOnly.message, /input\[0\]\.content\[1\].*does not accept images/)
  const badType = await client.responses.create({ model: 'vendor/chat-model', input: image('data:text/html;base64,PGI+') }).catch(e => e)
  t.equal(badType.status, 400)
  t.match(badType.message, /not an accepted image media type/)
  const local = await client.responses.create({ model: 'vendor/chat-model', input: image('http://127.0.0.1/x.png') }).catch(e => e)
  t.equal(local.status, 400, 'a URL the upstream would fetch must reach only public addresses')
  t.equal(chatUp.requests.length, 1, 'refused requests never reached the upstream')
})
