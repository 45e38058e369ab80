/**
 * The routes coding agents call besides the inference ones, against a listening gateway:
 * POST /v1/responses/input_tokens with the official openai SDK (`responses.inputTokens.count`),
 * forwarded to a messages upstream's count (as the messages request the body becomes) or counted
 * locally, never billed; `GET`/`HEAD /` and `/api/hello` (Claude Code's base-URL check) answer like
 * /healthz; POST /v1/responses/compact is 501 with the error body; `GET /v1/models` with Codex's
 * `client_version` query answers the list.
 */
import t, { type Test } from 'tap'
import OpenAI from 'openai'
import { Tiktoken } from 'js-tiktoken/lite'
import o200k from 'js-tiktoken/ranks/o200k_base'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json } from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { MESSAGE_OVERHEAD } from '../../core/tokens/local-count.ts'

const ORG = 'org-test'
const O200K = new Tiktoken(o200k)

async function setup (t: Test) {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, 1_000_000)
  const app = await buildTestApp({ ledger, doc: upstreamDoc(chatUp.origin, msgUp.origin), pipeline: [AUTH_ENTRY, { plugin: 'balance' }] })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close(); await ledger.close() })
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  return { url, client, ledger, chatUp, msgUp }
}

const TOOL = { type: 'function' as const, name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: false }

t.test('responses input_tokens on a messages upstream: forwarded as a messages count request', async t => {
  const { client, msgUp, chatUp, ledger } = await setup(t)
  msgUp.handle((_req, res) => json(res, 200, { input_tokens: 4242 }))
  const r = await client.responses.inputTokens.count({
    model: 'msgvendor/msg-model',
    instructions: 'Be brief.',
    input: [{ role: 'user', content: 'What is the weather in Paris?' }],
    tools: [TOOL],
  })
  t.same(r, { object: 'response.input_tokens', input_tokens: 4242 })
  t.equal(msgUp.requests.length, 1)
  const up = msgUp.requests[0]!
  t.equal(up.path, '/v1/messages/count_tokens')
  t.equal(up.body.model, 'up-model', 'model name replaced')
  t.match(JSON.stringify(up.body.messages), /weather in Paris/)
  t.match(JSON.stringify(up.body.system), /Be brief\./, 'instructions → system')
  t.equal(up.body.tools?.[0]?.name, 'get_weather', 'function tools → messages tools')
  t.same(Object.keys(up.body).filter(k => !['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking'].includes(k)), [], 'only the fields a count request takes (no max_tokens, which the translation adds)')
  t.equal(chatUp.requests.length, 0)
  t.same(await ledger.listUsage({}), [], 'nothing billed')
  t.same(await ledger.getBalance(ORG), { balance: 1_000_000, reserved: 0 })
})

t.test('responses input_tokens on a chat upstream: counted locally, the same count as count_tokens gives', async t => {
  const { client, url, chatUp } = await setup(t)
  const r = await client.responses.inputTokens.count({ model: 'vendor/chat-model', input: 'hello world' })
  t.same(r, { object: 'response.input_tokens', input_tokens: O200K.encode('hello world').length + MESSAGE_OVERHEAD })
  const viaMessages = await fetch(`${url}/v1/messages/count_tokens`, {
    method: 'POST',
    headers: { 'x-api-key': TEST_KEY, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'vendor/chat-model', messages: [{ role: 'user', content: 'hello world' }] }),
  }).then(res => res.json())
  t.equal(r.input_tokens, viaMessages.input_tokens)
  t.equal(chatUp.requests.length, 0, 'no upstream call')
})

t.test('responses input_tokens errors: OpenAI-shaped bodies with the spec statuses', async t => {
  const { client } = await setup(t)
  const cases: [Record<string, unknown>, number, RegExp][] = [
    [{ model: 'nope/none', input: 'x' }, 404, /nope\/none/],
    [{ input: 'x' }, 400, /model/i],
    [{ model: 'vendor/chat-model', input: [{ type: 'item_reference', id: 'msg_1' }] }, 400, /stateless/],
    [{ model: 'vendor/chat-model', previous_response_id: 'resp_1', input: 'x' }, 400, /stateless|previous_response_id/],
  ]
  for (const [body, status, message] of cases) {
    const err = await client.responses.inputTokens.count(body as never).then(() => undefined, (e: unknown) => e)
    t.ok(err instanceof OpenAI.APIError, `${JSON.stringify(body)}: an APIError`)
    t.equal((err as InstanceType<typeof OpenAI.APIError>).status, status)
    t.match((err as InstanceType<typeof OpenAI.APIError>).message, message)
  }
  const noKey = new OpenAI({ baseURL: client.baseURL, apiKey: 'sk-wrong', maxRetries: 0 })
  const err = await noKey.responses.inputTokens.count({ model: 'vendor/chat-model', input: 'x' }).then(() => undefined, (e: unknown) => e)
  t.equal((err as InstanceType<typeof OpenAI.APIError>).status, 401)
})

t.test('base-URL checks, compact and the model list with Codex query', async t => {
  const { url, client } = await setup(t)
  for (const path of ['/', '/api/hello']) {
    const head = await fetch(url + path, { method: 'HEAD' })
    t.equal(head.status, 200, `HEAD ${path}`)
    const get = await fetch(url + path)
    t.equal(get.status, 200, `GET ${path}`)
    t.same(await get.json(), { status: 'ok', service: 'model-gateway' })
  }
  const compact = await fetch(`${url}/v1/responses/compact`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'vendor/chat-model', input: 'x' }),
  })
  t.equal(compact.status, 501)
  t.same(await compact.json(), { error: { code: 501, message: 'This endpoint is not available yet.' } })
  const list = await client.models.list({ query: { client_version: '0.169.0' } })
  t.ok(list.data.some(m => m.id === 'vendor/chat-model'), 'the list, whatever the query')
})
