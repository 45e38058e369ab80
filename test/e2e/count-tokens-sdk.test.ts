/**
 * POST /v1/messages/count_tokens with the official Anthropic SDK (`client.messages.countTokens`)
 * against a listening gateway: forwarded to a messages upstream (model name replaced), counted
 * locally with the OpenAI tokenizers otherwise (and when the upstream has no count), never billed,
 * and the route's errors (400, 404, 401, 402, 413, 429). The other guards: count-tokens-guards.test.ts.
 */
import t, { type Test } from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import { Tiktoken } from 'js-tiktoken/lite'
import o200k from 'js-tiktoken/ranks/o200k_base'
import cl100k from 'js-tiktoken/ranks/cl100k_base'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json } from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { IMAGE_TOKENS, MESSAGE_OVERHEAD, TOOL_OVERHEAD } from '../../core/tokens/local-count.ts'

const ORG = 'org-test'
const O200K = new Tiktoken(o200k)
const CL100K = new Tiktoken(cl100k)

async function setup (t: Test, pipelineExtra: unknown[] = []) {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, 1_000_000)
  const extra = [
    { id: 'openai/gpt-4o', deployments: [{ provider: 'up-chat', model: 'gpt-4o-2024-08-06' }] },
    { id: 'openai/gpt-4', deployments: [{ provider: 'up-chat', model: 'gpt-4-0613' }] },
  ]
  const app = await buildTestApp({ ledger, doc: upstreamDoc(chatUp.origin, msgUp.origin, extra), pipeline: [...pipelineExtra, AUTH_ENTRY, { plugin: 'balance' }] })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close(); await ledger.close() })
  const client = new Anthropic({ baseURL: url, apiKey: TEST_KEY, maxRetries: 0 })
  return { url, client, ledger, chatUp, msgUp }
}

const TOOL = { name: 'get_weather', description: 'Weather for a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } }

t.test('a messages upstream counts: forwarded with the upstream model name, its answer returned', async t => {
  const { client, msgUp, ledger } = await setup(t)
  msgUp.handle((_req, res) => json(res, 200, { input_tokens: 4242 }))
  const r = await client.messages.countTokens({
    model: 'msgvendor/msg-model',
    system: 'Be brief.',
    messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    tools: [TOOL],
  }, { headers: { 'anthropic-beta': 'token-counting-2024-11-01' } })
  t.same(r, { input_tokens: 4242 })
  t.equal(msgUp.requests.length, 1)
  const up = msgUp.requests[0]!
  t.equal(up.path, '/v1/messages/count_tokens')
  t.equal(up.body.model, 'up-model', 'model name replaced')
  t.equal(up.body.system, 'Be brief.')
  t.same(up.body.tools, [TOOL])
  t.equal(up.headers['x-api-key'], 'sk-ant-upstream-secret', 'provider credentials, not the client key')
  t.notOk(String(up.headers.authorization ?? '').includes(TEST_KEY))
  t.same(await ledger.listUsage({}), [], 'nothing billed')
  t.same(await ledger.getBalance(ORG), { balance: 1_000_000, reserved: 0 }, 'nothing reserved or charged')
})

t.test('the messages upstream has no count (404, garbage): counted locally', async t => {
  const { client, msgUp } = await setup(t)
  msgUp.handle((_req, res) => json(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'no such route' } }))
  const r = await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: [{ role: 'user', content: 'hello world' }] })
  t.equal(r.input_tokens, O200K.encode('hello world').length + MESSAGE_OVERHEAD)
  msgUp.handle((_req, res) => json(res, 200, { tokens: 'many' }))
  const r2 = await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: [{ role: 'user', content: 'hello world' }] })
  t.equal(r2.input_tokens, r.input_tokens)
  // A count no prompt can have (past 1e9 tokens) is no count either.
  for (const absurd of [1e308, 2 ** 53 + 2, 1_000_000_001]) {
    msgUp.handle((_req, res) => json(res, 200, { input_tokens: absurd }))
    const r3 = await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: [{ role: 'user', content: 'hello world' }] })
    t.equal(r3.input_tokens, r.input_tokens, `${absurd}: counted locally`)
  }
  t.equal(msgUp.requests.length, 5)
})

t.test('chat-upstream models count locally: o200k for gpt-4o, cl100k for gpt-4, o200k otherwise', async t => {
  const { client, chatUp, ledger } = await setup(t)
  const text = 'Ünïcödé façade — naïve 東京 emojis 🎉🎉 and code: const x = await fetch(url);'
  const enc = (e: Tiktoken, s: string) => e.encode(s).length
  t.not(enc(O200K, text), enc(CL100K, text), 'the two tokenizers differ on this text')
  for (const [model, e] of [['openai/gpt-4o', O200K], ['openai/gpt-4', CL100K], ['vendor/chat-model', O200K]] as const) {
    const r = await client.messages.countTokens({ model, messages: [{ role: 'user', content: text }] })
    t.equal(r.input_tokens, enc(e, text) + MESSAGE_OVERHEAD, model)
  }
  // Every part counts: system blocks, text, tool_use input, tool_result, tools, an image.
  const body = {
    model: 'openai/gpt-4o',
    system: [{ type: 'text' as const, text: 'You are terse.' }],
    messages: [
      { role: 'user' as const, content: [{ type: 'text' as const, text: 'Weather?' }, { type: 'image' as const, source: { type: 'base64' as const, media_type: 'image/png' as const, data: 'iVBORw0KGgo=' } }] },
      { role: 'assistant' as const, content: [{ type: 'tool_use' as const, id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: 'toolu_1', content: [{ type: 'text' as const, text: 'Sunny, 21 C' }] }] },
    ],
    tools: [TOOL],
  }
  const expected = enc(O200K, 'You are terse.') + enc(O200K, 'Weather?') + IMAGE_TOKENS +
    enc(O200K, 'get_weather') + enc(O200K, JSON.stringify({ city: 'Paris' })) + enc(O200K, 'Sunny, 21 C') +
    3 * MESSAGE_OVERHEAD + TOOL_OVERHEAD + enc(O200K, 'get_weather') + enc(O200K, 'Weather for a city') + enc(O200K, JSON.stringify(TOOL.input_schema))
  t.equal((await client.messages.countTokens(body)).input_tokens, expected)
  t.equal(chatUp.requests.length, 0, 'a chat upstream is never asked')
  t.same(await ledger.listUsage({}), [], 'nothing billed')
})

t.test('errors: bad body 400, unknown model 404, no key 401, all in the messages error shape', async t => {
  const { client, url, msgUp } = await setup(t)
  msgUp.handle((_req, res) => json(res, 200, { input_tokens: 1 }))
  const bad = [
    {},
    { model: 'msgvendor/msg-model' },
    { model: 'msgvendor/msg-model', messages: 'hi' },
    { model: 'msgvendor/msg-model', messages: [{ role: 'developer', content: 'x' }] },
    { model: 'msgvendor/msg-model', messages: [{ role: 'user', content: 5 }] },
    { model: 'msgvendor/msg-model', messages: [], tools: {} },
  ]
  for (const body of bad) {
    const err = await client.messages.countTokens(body as never).then(() => null, e => e)
    t.ok(err instanceof Anthropic.BadRequestError, JSON.stringify(body))
    t.equal(err?.error?.type, 'error')
    t.equal(err?.error?.error?.type, 'invalid_request_error')
  }
  const notJson = await fetch(`${url}/v1/messages/count_tokens`, { method: 'POST', headers: { 'x-api-key': TEST_KEY, 'content-type': 'application/json' }, body: '[1,2]' })
  t.equal(notJson.status, 400)
  const unknown = await client.messages.countTokens({ model: 'nope/none', messages: [{ role: 'user', content: 'x' }] }).then(() => null, e => e)
  t.ok(unknown instanceof Anthropic.NotFoundError)
  t.equal(unknown?.error?.error?.type, 'not_found_error')
  const anon = new Anthropic({ baseURL: url, apiKey: 'sk-gw-wrong', maxRetries: 0 })
  const noKey = await anon.messages.countTokens({ model: 'msgvendor/msg-model', messages: [{ role: 'user', content: 'x' }] }).then(() => null, e => e)
  t.ok(noKey instanceof Anthropic.AuthenticationError)
  t.equal(noKey?.error?.error?.type, 'authentication_error')
  t.equal(msgUp.requests.length, 0, 'no refused call reached the upstream')
})

t.test('size and IP limits apply; balance refuses an organization with nothing left', async t => {
  const { client, ledger, msgUp } = await setup(t, [{ plugin: 'ip-limit', config: { limit: 4, windowMs: 24 * 3_600_000 } }, { plugin: 'size-limit', config: { maxBytes: 2048 } }])
  msgUp.handle((_req, res) => json(res, 200, { input_tokens: 7 }))
  t.same(await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: [{ role: 'user', content: 'x' }] }), { input_tokens: 7 })
  t.same(await ledger.getBalance(ORG), { balance: 1_000_000, reserved: 0 }, 'a count holds and charges nothing')
  // An organization with nothing left is refused, as its next call would be.
  await ledger.topUp(ORG, -1_000_000)
  const broke = await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: [{ role: 'user', content: 'x' }] }).then(() => null, e => e)
  t.ok(broke instanceof Anthropic.APIError && broke.status === 402, '402')
  await ledger.topUp(ORG, 1_000_000)
  const big = await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: [{ role: 'user', content: 'x'.repeat(4096) }] }).then(() => null, e => e)
  t.equal(big?.status, 413)
  await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: [{ role: 'user', content: 'x' }] })
  const limited = await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: [{ role: 'user', content: 'x' }] }).then(() => null, e => e)
  t.ok(limited instanceof Anthropic.RateLimitError, 'the fifth call from this IP is limited')
})
