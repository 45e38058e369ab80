/**
 * An upstream usage whose input or output count is there but cannot be read (-1, "12", 1e308,
 * past 2^53, true, an object) is no usage: the call is billed the gateway's estimate, marked
 * estimated, as one whose upstream reported none, and a translated answer shows the client those
 * same counts. Counting such a value as 0 billed that part of the call as free. A missing or null
 * count, and a detail count that cannot be read (cached input), read as 0, as before. Driven with
 * the official SDKs on a listening gateway against chat, messages and Responses upstreams, JSON and
 * streamed.
 */
import t from 'tap'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, sse, chatChunk, msgEvent, responsesResponse } from '../helpers/fake-upstream.ts'
import { outcomeSpy } from '../../testing.ts'
import { unreadableUsage } from '../../index.ts'

const GARBAGE: unknown[] = [-1, '12', 1e308, 2 ** 53 + 2, 1e9 + 1, true, {}, [], 'NaN']

t.test('unreadableUsage: an input or output count that is there but is no count', async t => {
  for (const [protocol, input, output] of [['chat', 'prompt_tokens', 'completion_tokens'], ['messages', 'input_tokens', 'output_tokens'], ['responses', 'input_tokens', 'output_tokens']] as const) {
    t.equal(unreadableUsage({ [input]: 10, [output]: 2 }, protocol), false, `${protocol}: counts`)
    t.equal(unreadableUsage({ [input]: 0, [output]: 1.5 }, protocol), false, `${protocol}: 0 and a fraction are counts`)
    t.equal(unreadableUsage({}, protocol), false, `${protocol}: missing counts read as 0`)
    t.equal(unreadableUsage({ [input]: null, [output]: null }, protocol), false, `${protocol}: null counts read as 0`)
    t.equal(unreadableUsage({ [input]: 10, [output]: 2, cached_tokens: -4, input_tokens_details: { cached_tokens: 'x' } }, protocol), false, `${protocol}: a detail count is not looked at`)
    for (const g of GARBAGE) {
      t.equal(unreadableUsage({ [input]: g, [output]: 2 }, protocol), true, `${protocol}: input ${JSON.stringify(g)}`)
      t.equal(unreadableUsage({ [input]: 10, [output]: g }, protocol), true, `${protocol}: output ${JSON.stringify(g)}`)
    }
  }
  t.equal(unreadableUsage({ prompt_tokens: -1 }, 'gemini'), false, 'another protocol: not read here')
})

t.test('billed the estimate, marked estimated, and a translated answer shows what is billed', async t => {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const respUp = await startFakeUpstream()
  const spy = outcomeSpy()
  const doc = upstreamDoc(chatUp.origin, msgUp.origin, [{ id: 'vendor/resp-model', deployments: [{ provider: 'up-resp', model: 'r' }] }])
  ;(doc.providers as unknown[]).push({ name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${respUp.origin}/v1`, apiKey: 'sk-resp' } })
  const app = await buildTestApp({ doc, pipeline: [AUTH_ENTRY, { plugin: 'outcome-spy' }], plugins: [spy.plugin] })
  const base = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close(); await respUp.close() })
  const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const anthropic = new Anthropic({ baseURL: base, apiKey: TEST_KEY, maxRetries: 0 })
  const prompt = 'Tell me about the weather. '.repeat(40)
  const last = async (n: number) => { await spy.settled(n); return spy.seen[n - 1].outcome }
  let calls = 0

  // Chat JSON, same protocol: the client gets the upstream's bytes; the call is billed the estimate.
  for (const g of GARBAGE) {
    chatUp.handle((_req, res) => json(res, 200, { id: 'c1', object: 'chat.completion', created: 1, model: 'up-model', choices: [{ index: 0, message: { role: 'assistant', content: 'Sunny.' }, finish_reason: 'stop' }], usage: { prompt_tokens: g, completion_tokens: 3, total_tokens: 9 } }))
    const r = await openai.chat.completions.create({ model: 'vendor/chat-model', messages: [{ role: 'user', content: prompt }] })
    t.equal(r.choices[0].message.content, 'Sunny.')
    const o = await last(++calls)
    t.equal(o.usageEstimated, true, `chat prompt_tokens ${JSON.stringify(g)}: estimated`)
    t.ok(o.usage!.inputTokens >= Math.ceil(prompt.length / 4), `chat prompt_tokens ${JSON.stringify(g)}: input billed the estimate (${o.usage!.inputTokens}), not 0`)
    t.ok(o.usage!.outputTokens >= 3, 'output from the answer\'s characters')
  }

  // Messages client, chat upstream (translated): shown exactly what it is billed.
  chatUp.handle((_req, res) => json(res, 200, { id: 'c2', object: 'chat.completion', created: 1, model: 'up-model', choices: [{ index: 0, message: { role: 'assistant', content: 'Rainy.' }, finish_reason: 'stop' }], usage: { prompt_tokens: 40, completion_tokens: -7, total_tokens: 33 } }))
  const m = await anthropic.messages.create({ model: 'vendor/chat-model', max_tokens: 50, messages: [{ role: 'user', content: prompt }] })
  let o = await last(++calls)
  t.equal(o.usageEstimated, true, 'completion_tokens -7: estimated')
  t.ok(o.usage!.outputTokens > 0, 'output not billed as free')
  t.same({ input: m.usage.input_tokens, output: m.usage.output_tokens }, { input: o.usage!.inputTokens, output: o.usage!.outputTokens }, 'the translated answer shows what is billed')

  // A chat stream whose final usage cannot be read.
  chatUp.handle((_req, res) => sse(res, [chatChunk({ role: 'assistant', content: '' }), chatChunk({ content: 'Windy ' }), chatChunk({ content: 'today.' }), chatChunk({}, 'stop'),
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'up-model', choices: [], usage: { prompt_tokens: 30, completion_tokens: 1e308, total_tokens: 1e308 } })}\n\n`, 'data: [DONE]\n\n']))
  let text = ''
  for await (const c of await openai.chat.completions.create({ model: 'vendor/chat-model', stream: true, messages: [{ role: 'user', content: prompt }] })) text += c.choices[0]?.delta?.content ?? ''
  t.equal(text, 'Windy today.')
  o = await last(++calls)
  t.equal(o.usageEstimated, true, 'stream, completion_tokens 1e308: estimated')
  t.equal(o.usage!.outputTokens, Math.ceil('Windy today.'.length / 4), 'output from the characters relayed')

  // A messages stream: message_start's input count is kept; message_delta's output cannot be read.
  msgUp.handle((_req, res) => sse(res, [
    msgEvent('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'up-model', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 321, output_tokens: 1 } } }),
    msgEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    msgEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Foggy, then clear.' } }),
    msgEvent('content_block_stop', { index: 0 }),
    msgEvent('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 'many' } }),
    msgEvent('message_stop', {}),
  ]))
  const stream = anthropic.messages.stream({ model: 'msgvendor/msg-model', max_tokens: 50, messages: [{ role: 'user', content: prompt }] })
  t.equal((await stream.finalMessage()).content.map(b => b.type === 'text' ? b.text : '').join(''), 'Foggy, then clear.')
  o = await last(++calls)
  t.equal(o.usageEstimated, true, 'message_delta output "many": estimated')
  t.equal(o.usage!.inputTokens, 321, 'input from message_start\'s count')
  t.equal(o.usage!.outputTokens, Math.ceil('Foggy, then clear.'.length / 4), 'output from the characters relayed')

  // Responses, JSON.
  respUp.handle((_req, res) => json(res, 200, responsesResponse('Hail.', { input_tokens: true, output_tokens: 2, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 2 })))
  const r = await openai.responses.create({ model: 'vendor/resp-model', input: prompt })
  t.equal(r.output_text, 'Hail.')
  o = await last(++calls)
  t.equal(o.usageEstimated, true, 'Responses input_tokens true: estimated')
  t.ok(o.usage!.inputTokens >= Math.ceil(prompt.length / 4))

  // Readable counts, and a detail count that cannot be read: the upstream's counts, not estimated.
  chatUp.handle((_req, res) => json(res, 200, { id: 'c3', object: 'chat.completion', created: 1, model: 'up-model', choices: [{ index: 0, message: { role: 'assistant', content: 'Clear.' }, finish_reason: 'stop' }], usage: { prompt_tokens: 40, completion_tokens: 3, total_tokens: 43, prompt_tokens_details: { cached_tokens: -4 } } }))
  await openai.chat.completions.create({ model: 'vendor/chat-model', messages: [{ role: 'user', content: prompt }] })
  o = await last(++calls)
  t.equal(o.usageEstimated, false)
  t.match(o.usage, { inputTokens: 40, outputTokens: 3, cachedInputTokens: 0 })
})
