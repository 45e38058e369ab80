/**
 * A streamed call whose upstream answers with one JSON answer (it does not stream, or ignored
 * `stream: true`): the client still gets the stream it asked for, made from the answer, and the
 * official SDKs (openai for chat completions and the Responses API, @anthropic-ai/sdk for
 * messages) assemble from it what the same call answers unstreamed. It is billed the answer's
 * usage, not an estimate.
 */
import t from 'tap'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, upstreamDoc } from '../helpers/fake-upstream.ts'
import { outcomeSpy } from '../../testing.ts'

const CHAT_ANSWER = {
  id: 'chatcmpl-whole', object: 'chat.completion', created: 1767225600, model: 'up-model',
  choices: [{
    index: 0, finish_reason: 'tool_calls', logprobs: null,
    message: {
      role: 'assistant', content: 'Checking both.', reasoning_content: 'Two cities.',
      tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
        { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
      ],
    },
  }],
  usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42, prompt_tokens_details: { cached_tokens: 5 } },
}
const MESSAGES_ANSWER = {
  id: 'msg_whole', type: 'message', role: 'assistant', model: 'up-model', stop_reason: 'tool_use', stop_sequence: null,
  content: [
    { type: 'thinking', thinking: 'Two cities.', signature: 'sig-abc' },
    { type: 'text', text: 'Checking both.' },
    { type: 'tool_use', id: 'toolu_a', name: 'get_weather', input: { city: 'Oslo' } },
    { type: 'tool_use', id: 'toolu_b', name: 'get_weather', input: { city: 'Rome' } },
  ],
  usage: { input_tokens: 25, cache_creation_input_tokens: 0, cache_read_input_tokens: 5, output_tokens: 12 },
}
const RESPONSES_ANSWER = {
  id: 'resp_whole', object: 'response', created_at: 1767225600, status: 'completed', error: null, incomplete_details: null, model: 'up-model',
  output: [
    { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Two cities.' }] },
    { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Checking both.', annotations: [] }] },
    { type: 'function_call', id: 'fc_a', call_id: 'call_a', name: 'get_weather', arguments: '{"city":"Oslo"}', status: 'completed' },
    { type: 'function_call', id: 'fc_b', call_id: 'call_b', name: 'get_weather', arguments: '{"city":"Rome"}', status: 'completed' },
  ],
  usage: { input_tokens: 30, input_tokens_details: { cached_tokens: 5 }, output_tokens: 12, output_tokens_details: { reasoning_tokens: 3 }, total_tokens: 42 },
  parallel_tool_calls: true, tool_choice: 'auto', tools: [], store: false,
}
/** The counts every upstream above reports, normalized: what each call must be billed. */
const BILLED = { inputTokens: 30, cachedInputTokens: 5, outputTokens: 12 }

const PARAMS = ['max_tokens', 'tools', 'tool_choice', 'stream', 'thinking', 'reasoning_effort', 'parallel_tool_calls']
const MODELS = ['vendor/whole-chat', 'vendor/whole-messages', 'vendor/whole-responses']
const weather = { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] }

t.test('a streamed call answered whole reaches the SDKs as a stream of that answer', async t => {
  const chatUp = await startFakeUpstream((_req, res) => json(res, 200, CHAT_ANSWER))
  const msgUp = await startFakeUpstream((_req, res) => json(res, 200, MESSAGES_ANSWER))
  const respUp = await startFakeUpstream((_req, res) => json(res, 200, RESPONSES_ANSWER))
  const doc = upstreamDoc(chatUp.origin, msgUp.origin, [
    { id: MODELS[0], supported_parameters: PARAMS, deployments: [{ provider: 'up-chat', model: 'up-model' }] },
    { id: MODELS[1], supported_parameters: PARAMS, deployments: [{ provider: 'up-msg', model: 'up-model' }] },
    { id: MODELS[2], supported_parameters: PARAMS, deployments: [{ provider: 'up-resp', model: 'up-model' }] },
  ])
  ;(doc.providers as unknown[]).push({ name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${respUp.origin}/v1`, apiKey: 'sk-upstream-secret' } })
  const spy = outcomeSpy()
  const app = await buildTestApp({ doc, pipeline: [AUTH_ENTRY, { plugin: 'outcome-spy' }], plugins: [spy.plugin] })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close(); await respUp.close() })
  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const anthropic = new Anthropic({ baseURL: url, apiKey: TEST_KEY, maxRetries: 0 })
  let calls = 0

  for (const model of MODELS) {
    t.test(`chat completions, ${model}`, async t => {
      const body = { model, max_tokens: 64, messages: [{ role: 'user' as const, content: 'weather in Oslo and Rome' }], tools: [{ type: 'function' as const, function: { name: 'get_weather', parameters: weather } }] }
      const whole = await openai.chat.completions.create(body)
      const stream = openai.chat.completions.stream({ ...body, stream_options: { include_usage: true } })
      const chunks: unknown[] = []
      stream.on('chunk', c => chunks.push(c))
      const streamed = await stream.finalChatCompletion()
      calls += 2
      t.ok(chunks.length >= 4, 'a stream of chunks, not one JSON answer')
      const [w, s] = [whole.choices[0], streamed.choices[0]]
      t.equal(s.message.content, w.message.content)
      t.equal(s.message.content, 'Checking both.')
      t.same(s.message.tool_calls?.map(c => c.type === 'function' && [c.id, c.function.name, JSON.parse(c.function.arguments)]),
        w.message.tool_calls?.map(c => c.type === 'function' && [c.id, c.function.name, JSON.parse(c.function.arguments)]))
      t.equal(s.message.tool_calls?.length, 2)
      t.equal(s.finish_reason, 'tool_calls')
      t.equal(streamed.usage?.prompt_tokens, whole.usage?.prompt_tokens)
      t.equal(streamed.usage?.completion_tokens, 12)
    })

    t.test(`messages, ${model}`, async t => {
      const body = { model, max_tokens: 64, messages: [{ role: 'user' as const, content: 'weather in Oslo and Rome' }], tools: [{ name: 'get_weather', input_schema: weather }] }
      const whole = await anthropic.messages.create(body)
      const events: string[] = []
      const stream = anthropic.messages.stream(body)
      stream.on('streamEvent', e => events.push(e.type))
      const streamed = await stream.finalMessage()
      calls += 2
      t.equal(events[0], 'message_start')
      t.equal(events.at(-1), 'message_stop')
      const shape = (m: Anthropic.Message) => m.content.map(b => b.type === 'text' ? ['text', b.text] : b.type === 'tool_use' ? ['tool_use', b.id, b.name, b.input] : b.type === 'thinking' ? ['thinking', b.thinking] : [b.type])
      t.same(shape(streamed), shape(whole))
      t.same(shape(streamed).filter(b => b[0] !== 'thinking'), [['text', 'Checking both.'], ['tool_use', shape(whole)[shape(whole).length - 2][1], 'get_weather', { city: 'Oslo' }], ['tool_use', shape(whole).at(-1)![1], 'get_weather', { city: 'Rome' }]])
      t.equal(streamed.stop_reason, 'tool_use')
      t.equal(streamed.usage.output_tokens, 12)
      t.equal(streamed.usage.input_tokens + (streamed.usage.cache_read_input_tokens ?? 0), 30)
    })

    t.test(`Responses API, ${model}`, async t => {
      const body = { model, input: 'weather in Oslo and Rome', tools: [{ type: 'function' as const, name: 'get_weather', parameters: weather, strict: false }] }
      const whole = await openai.responses.create(body)
      const events: string[] = []
      const stream = openai.responses.stream(body)
      stream.on('event', e => events.push(e.type))
      const streamed = await stream.finalResponse()
      calls += 2
      t.equal(events[0], 'response.created')
      t.equal(events.at(-1), 'response.completed')
      t.ok(events.includes('response.output_text.delta'))
      t.equal(streamed.output_text, whole.output_text)
      t.equal(streamed.output_text, 'Checking both.')
      const fns = (r: OpenAI.Responses.Response) => r.output.flatMap(i => i.type === 'function_call' ? [[i.call_id, i.name, JSON.parse(i.arguments)]] : [])
      t.same(fns(streamed), fns(whole))
      t.equal(fns(streamed).length, 2)
      t.equal(streamed.usage?.output_tokens, 12)
    })
  }

  t.test('every call is billed the answer\'s own usage', async t => {
    await spy.settled(calls)
    t.equal(spy.seen.length, calls)
    for (const s of spy.seen) {
      t.match(s.outcome.usage, BILLED, `${s.route}: the upstream's counts`)
      t.equal(s.outcome.usageEstimated, false)
      t.equal(s.outcome.upstreamSucceeded, true)
    }
    for (const up of [chatUp, msgUp, respUp]) {
      const streamedAsks = up.requests.filter(r => r.body.stream === true)
      t.ok(streamedAsks.length >= 3, 'the upstream was asked for a stream and answered whole')
    }
  })
})
