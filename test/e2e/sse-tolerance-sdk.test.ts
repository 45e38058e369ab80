// SSE tolerance: upstream SSE with `: comment` lines, `data:` without a space, CRLF line
// ends and unknown events, replayed through both official SDKs, same protocol and translated.
import t from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, sse, upstreamDoc } from '../helpers/fake-upstream.ts'

const crlf = (s: string): string => s.replace(/\n/g, '\r\n')
const chunk = (delta: unknown, finish: string | null = null) => JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'up-model', choices: [{ index: 0, delta, finish_reason: finish }] })

const CHAT_UPSTREAM = [
  ': keep-alive comment\n\n',
  `data:${chunk({ role: 'assistant', content: 'Hel' })}\n\n`,
  'event: vendor_heartbeat\ndata: {"beat":1}\n\n',
  `data: ${chunk({ content: 'lo' })}\n\n`,
  `data:${chunk({}, 'stop')}\n\n`,
  `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'up-model', choices: [], usage: { prompt_tokens: 12, completion_tokens: 2, total_tokens: 14, prompt_tokens_details: { cached_tokens: 4 } } })}\n\n`,
  'data: [DONE]\n\n',
].map(crlf)

const ev = (name: string, data: Record<string, unknown>, space = true) => `event: ${name}\ndata:${space ? ' ' : ''}${JSON.stringify({ type: name, ...data })}\n\n`
const MSG_UPSTREAM = [
  ': comment before anything\n\n',
  ev('message_start', { message: { id: 'msg_x', type: 'message', role: 'assistant', model: 'up-model', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 8, output_tokens: 1, cache_read_input_tokens: 4, cache_creation_input_tokens: 0 } } }, false),
  ev('ping', {}),
  ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  'event: some_future_event\ndata: {"type":"some_future_event","x":1}\n\n',
  ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hel' } }, false),
  ': mid-stream comment\n\n',
  ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'lo' } }),
  ev('content_block_stop', { index: 0 }),
  ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } }),
  ev('message_stop', {}),
].map(crlf)

t.test('tolerant SSE through both SDKs', async t => {
  const chatUp = await startFakeUpstream((_req, res) => sse(res, CHAT_UPSTREAM))
  const msgUp = await startFakeUpstream((_req, res) => sse(res, MSG_UPSTREAM))
  const app = await buildTestApp({ pipeline: [AUTH_ENTRY], doc: upstreamDoc(chatUp.origin, msgUp.origin) })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close() })
  const anthropic = new Anthropic({ baseURL: url, apiKey: TEST_KEY, maxRetries: 0 })
  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 })

  for (const model of ['vendor/chat-model', 'msgvendor/msg-model']) {
    t.test(`OpenAI SDK, ${model}`, async t => {
      const stream = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } })
      let text = ''
      let finish: string | null = null
      let usage: OpenAI.CompletionUsage | undefined
      for await (const c of stream) {
        text += c.choices[0]?.delta?.content ?? ''
        finish = c.choices[0]?.finish_reason ?? finish
        if (c.usage) usage = c.usage
      }
      t.equal(text, 'Hello')
      t.equal(finish, 'stop')
      t.equal(usage?.prompt_tokens, 12)
      t.equal(usage?.prompt_tokens_details?.cached_tokens, 4)
      t.equal(usage?.completion_tokens, 2)
    })
    t.test(`Anthropic SDK, ${model}`, async t => {
      const final = await anthropic.messages.stream({ model, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }).finalMessage()
      t.equal(final.content.length, 1)
      t.match(final.content[0], { type: 'text', text: 'Hello' })
      t.equal(final.stop_reason, 'end_turn')
      t.equal(final.usage.input_tokens, 8)
      t.equal(final.usage.cache_read_input_tokens, 4)
      t.equal(final.usage.output_tokens, 2)
    })
  }
})
