/**
 * An upstream stream that sends an error event before any output (its 200 already written) is
 * answered as though the upstream had answered with the status the event stands for. A refusal of
 * the request (a prompt over the context window) is the client's 400 with the upstream's message
 * and no failover; throttling (a 429, an overloaded_error) fails over and, with no deployment left,
 * is the route's 503 with the stream's Retry-After; a server error is the 502. Nothing is billed.
 * Driven on a listening gateway by the official SDKs, each on its own protocol, against chat,
 * messages and Responses upstreams.
 */
import t, { type Test } from 'tap'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import type { ServerResponse } from 'node:http'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, sse, upstreamDoc, msgEvent, chatChunk, chatTextStream, messagesTextStream, responsesTextStream } from '../helpers/fake-upstream.ts'
import { outcomeSpy } from '../../testing.ts'

const CONTEXT = "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens."
const chatError = (error: Record<string, unknown>): string => `data: ${JSON.stringify({ error })}\n\n`
const MSG_START = msgEvent('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'up-model', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 9, output_tokens: 1 } } })
const msgError = (type: string, message: string): string => msgEvent('error', { error: { type, message } })
const respEvent = (name: string, data: Record<string, unknown>): string => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`
const RESP_CREATED = responsesTextStream(['x'])[0]

/** A 200 event stream with extra headers (the fake's sse() writes none). */
function sseWith (res: ServerResponse, headers: Record<string, string>, events: string[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers })
  for (const e of events) res.write(e)
  res.end()
}

async function setup (t: Test) {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const respUp = await startFakeUpstream()
  const spy = outcomeSpy()
  const doc = upstreamDoc(chatUp.origin, msgUp.origin, [
    { id: 'vendor/chat-then-msg', deployments: [{ provider: 'up-chat', model: 'c', priority: 0 }, { provider: 'up-msg', model: 'm', priority: 1 }] },
    { id: 'msgvendor/msg-then-chat', supported_parameters: ['max_tokens', 'stream'], deployments: [{ provider: 'up-msg', model: 'm', priority: 0 }, { provider: 'up-chat', model: 'c', priority: 1 }] },
    { id: 'vendor/resp-model', deployments: [{ provider: 'up-resp', model: 'r' }] },
  ])
  ;(doc.providers as unknown[]).push({ name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${respUp.origin}/v1`, apiKey: 'sk-resp' } })
  const app = await buildTestApp({ doc: { ...doc, server: { streamHoldMs: 2000 } }, pipeline: [AUTH_ENTRY, { plugin: 'outcome-spy' }], plugins: [spy.plugin], circuit: { failureThreshold: 1000, coolDownMs: 1 } })
  const base = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close(); await respUp.close() })
  const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const anthropic = new Anthropic({ baseURL: base, apiKey: TEST_KEY, maxRetries: 0 })
  return { chatUp, msgUp, respUp, spy, openai, anthropic }
}

/** The error a promise rejects with (undefined when it resolves). */
const failure = (p: Promise<unknown>): Promise<unknown> => p.then(() => undefined, (e: unknown) => e)

t.test('a refusal before the first output is the client\'s 400 with the upstream\'s message, and no failover', async t => {
  const { chatUp, msgUp, respUp, spy, openai, anthropic } = await setup(t)
  chatUp.handle((_req, res) => sse(res, [chatError({ message: CONTEXT, type: 'BadRequestError', param: null, code: 400 })]))
  msgUp.handle((_req, res) => sse(res, messagesTextStream(['never'])))
  const chat = await failure(openai.chat.completions.create({ model: 'vendor/chat-then-msg', stream: true, messages: [{ role: 'user', content: 'hi' }] }))
  t.ok(chat instanceof OpenAI.BadRequestError, `openai: BadRequestError (${String(chat)})`)
  t.equal((chat as InstanceType<typeof OpenAI.APIError>).status, 400)
  t.match((chat as Error).message, /maximum context length is 4096 tokens/, 'the upstream\'s message, for the agent to compact its context')
  t.equal(msgUp.requests.length, 0, 'no failover: another deployment would refuse it too')

  msgUp.handle((_req, res) => sse(res, [MSG_START, msgEvent('ping', {}), msgError('invalid_request_error', 'prompt is too long: 250000 tokens > 200000 maximum')]))
  chatUp.handle((_req, res) => sse(res, chatTextStream(['never'])))
  const chatBefore = chatUp.requests.length
  const msg = await failure(anthropic.messages.create({ model: 'msgvendor/msg-then-chat', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }] }))
  t.ok(msg instanceof Anthropic.BadRequestError, `anthropic: BadRequestError (${String(msg)})`)
  t.match((msg as InstanceType<typeof Anthropic.APIError>).error, { type: 'error', error: { type: 'invalid_request_error', message: /prompt is too long/ } })
  t.equal(chatUp.requests.length, chatBefore, 'no failover')

  respUp.handle((_req, res) => sse(res, [RESP_CREATED, respEvent('response.failed', { sequence_number: 1, response: { id: 'resp_1', object: 'response', status: 'failed', error: { code: 'context_length_exceeded', message: 'Your input exceeds the context window of this model.' }, output: [] } })]))
  const resp = await failure(openai.responses.create({ model: 'vendor/resp-model', input: 'hi', stream: true }))
  t.ok(resp instanceof OpenAI.BadRequestError, `responses: BadRequestError (${String(resp)})`)
  t.match((resp as Error).message, /exceeds the context window/)
  respUp.handle((_req, res) => sse(res, [RESP_CREATED, respEvent('response.failed', { sequence_number: 1, response: { id: 'resp_2', object: 'response', status: 'failed', error: { code: 'invalid_prompt', message: 'Invalid prompt: flagged.' }, output: [] } })]))
  const prompt = await failure(openai.responses.create({ model: 'vendor/resp-model', input: 'hi', stream: true }))
  t.ok(prompt instanceof OpenAI.BadRequestError, `responses, invalid_prompt: BadRequestError (${String(prompt)})`)

  await spy.settled(4)
  t.equal(spy.seen.length, 4)
  for (const s of spy.seen) {
    t.equal(s.outcome.status, 400)
    t.equal(s.outcome.error?.code, 'GW_ERR_UPSTREAM_BAD_REQUEST')
    t.equal(s.outcome.usage, undefined, 'nothing billed')
  }
})

t.test('throttling before the first output fails over; with no deployment left it is the 503 with the stream\'s Retry-After', async t => {
  const { chatUp, msgUp, respUp, spy, openai, anthropic } = await setup(t)
  chatUp.handle((_req, res) => sse(res, [chatError({ message: 'Rate limit reached', type: 'rate_limit_exceeded', code: 429 })]))
  msgUp.handle((_req, res) => sse(res, messagesTextStream(['from ', 'messages'])))
  const served = await openai.chat.completions.create({ model: 'vendor/chat-then-msg', stream: true, messages: [{ role: 'user', content: 'hi' }] })
  let text = ''
  for await (const c of served) text += c.choices[0]?.delta?.content ?? ''
  t.equal(text, 'from messages', 'the next deployment answered')

  msgUp.handle((_req, res) => sseWith(res, { 'retry-after': '7' }, [MSG_START, msgError('overloaded_error', 'Overloaded')]))
  const msg = await failure(anthropic.messages.create({ model: 'msgvendor/msg-model', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }] }))
  t.ok(msg instanceof Anthropic.APIError, `anthropic: APIError (${String(msg)})`)
  t.equal((msg as InstanceType<typeof Anthropic.APIError>).status, 503)
  t.match((msg as InstanceType<typeof Anthropic.APIError>).error, { type: 'error', error: { type: 'overloaded_error' } })
  t.equal((msg as InstanceType<typeof Anthropic.APIError>).headers?.get('retry-after'), '7', 'the upstream\'s Retry-After')

  respUp.handle((_req, res) => sse(res, [RESP_CREATED, respEvent('error', { sequence_number: 1, code: 'rate_limit_exceeded', message: 'Rate limit reached', param: null })]))
  const resp = await failure(openai.responses.create({ model: 'vendor/resp-model', input: 'hi', stream: true }))
  t.ok(resp instanceof OpenAI.APIError, `responses: APIError (${String(resp)})`)
  t.equal((resp as InstanceType<typeof OpenAI.APIError>).status, 503)

  await spy.settled(3)
  t.same(spy.seen.map(s => [s.outcome.status, s.outcome.error?.code, s.outcome.usage === undefined]), [
    [200, undefined, false],
    [503, 'GW_ERR_UPSTREAM_UNAVAILABLE', true],
    [503, 'GW_ERR_UPSTREAM_UNAVAILABLE', true],
  ])
})

t.test('a server error, an error event that is not JSON, or no error event before the first output: the 502', async t => {
  const { chatUp, msgUp, openai, anthropic } = await setup(t)
  for (const events of [[MSG_START, msgError('api_error', 'Internal server error')], [MSG_START, 'event: error\ndata: not json\n\n'], [MSG_START]]) {
    msgUp.handle((_req, res) => sse(res, events))
    const msg = await failure(anthropic.messages.create({ model: 'msgvendor/msg-model', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }] }))
    t.equal((msg as InstanceType<typeof Anthropic.APIError>).status, 502, events.join('').slice(0, 80))
    t.match((msg as InstanceType<typeof Anthropic.APIError>).error, { type: 'error', error: { type: 'api_error' } })
  }
  chatUp.handle((_req, res) => sse(res, [chatError({ message: 'boom', type: 'server_error', code: 500 })]))
  const chat = await failure(openai.chat.completions.create({ model: 'vendor/chat-model', stream: true, messages: [{ role: 'user', content: 'hi' }] }))
  t.equal((chat as InstanceType<typeof OpenAI.APIError>).status, 502)
})

t.test('output that mentions "error" is output: a chunk with choices is never taken for an error', async t => {
  const { chatUp, openai } = await setup(t)
  chatUp.handle((_req, res) => sse(res, [chatChunk({ role: 'assistant', content: '' }), chatChunk({ content: '"error"' }), chatChunk({ content: ' {"error":1}' }), chatChunk({}, 'stop'),
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'up-model', choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })}\n\n`, 'data: [DONE]\n\n']))
  const served = await openai.chat.completions.create({ model: 'vendor/chat-model', stream: true, messages: [{ role: 'user', content: 'hi' }] })
  let text = ''
  for await (const c of served) text += c.choices[0]?.delta?.content ?? ''
  t.equal(text, '"error" {"error":1}')
})
