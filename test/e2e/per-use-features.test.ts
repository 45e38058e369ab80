/**
 * Server tools and service tiers through a listening gateway: refused (400 naming the parameter,
 * in each route's error shape, nothing sent upstream) unless the model lists the feature and its
 * price has a per-use price or tier multiplier; when they pass, the uses the fake upstream reports
 * (messages `usage.server_tool_use`, Responses `*_call` output items, one per chat web search)
 * are billed at `price.perUse` per 1000 and a tier's token cost at its multiplier, JSON and
 * streamed, with many calls in flight at once.
 */
import t, { type Test } from 'tap'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, sse, msgEvent, respEvent, responsesResponse, responsesUsage, chatCompletion } from '../helpers/fake-upstream.ts'
import { openLedger, type Ledger } from '../../core/ledger/index.ts'
import { until } from '../helpers/until.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'

const ORG = 'org-test'
const START = 1_000_000_000
const BASE = ['temperature', 'max_tokens', 'tools', 'tool_choice', 'stream', 'stop_sequences']
const PRICED = { input: 1, output: 2, perUse: { web_search: 10 }, serviceTiers: { priority: 2 } }
const PLAIN = { input: 1, output: 2 }
const SEARCH = { type: 'web_search_20250305', name: 'web_search', max_uses: 5 }
const MCP_SERVER = { type: 'url', url: 'https://mcp.example.com/sse', name: 'example', authorization_token: 'tok' }
const MCP_TOOLSET = { type: 'mcp_toolset', mcp_server_name: 'example' }

async function setup (t: Test, given?: Ledger) {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const respUp = await startFakeUpstream()
  const ledger = given ?? await openLedger({ backend: 'sqlite', path: ':memory:' })
  if (!given) await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, START)
  const model = (id: string, provider: string, price: unknown, extra: string[]) => ({ id, price, supported_parameters: [...BASE, ...extra], deployments: [{ provider, model: 'up-model' }] })
  const app = await buildTestApp({
    ledger,
    pipeline: [AUTH_ENTRY, { plugin: 'balance' }],
    doc: {
      metrics: { listen: 'main' },
      providers: [
        { name: 'up-chat', adapter: 'openai-compatible', config: { baseUrl: `${chatUp.origin}/v1`, apiKey: 'sk-up' } },
        { name: 'up-msg', adapter: 'anthropic-compatible', config: { baseUrl: msgUp.origin, apiKey: 'sk-ant-up' } },
        { name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${respUp.origin}/v1`, apiKey: 'sk-up' } },
      ],
      models: [
        model('m/search', 'up-msg', PRICED, ['web_search', 'service_tier']),
        model('m/plain', 'up-msg', PLAIN, []),
        model('m/unpriced', 'up-msg', PLAIN, ['web_search', 'service_tier']),
        model('m/mcp', 'up-msg', { ...PLAIN, perUse: { mcp: 0 } }, ['mcp']),
        model('m/mcp-unpriced', 'up-msg', PLAIN, ['mcp']),
        model('r/search', 'up-resp', PRICED, ['web_search', 'service_tier', 'image_generation', 'code_interpreter']),
        model('r/plain', 'up-resp', PLAIN, []),
        model('c/search', 'up-chat', PRICED, ['web_search', 'service_tier']),
        model('c/plain', 'up-chat', PLAIN, ['web_search_options', 'service_tier']),
      ],
    },
  })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close(); await respUp.close(); if (!given) await ledger.close() })
  const anthropic = new Anthropic({ baseURL: url, apiKey: TEST_KEY, maxRetries: 0 })
  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const spent = async () => START - (await ledger.getBalance(ORG))!.balance
  /** The usage records once `n` calls were charged (charges are batched after the answer). */
  const charged = async (n: number) => { await until(async () => (await ledger.listUsage({})).length >= n); return ledger.listUsage({}) }
  return { url, chatUp, msgUp, respUp, ledger, anthropic, openai, spent, charged }
}

const post = (url: string, path: string, body: unknown) => fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })

const messagesAnswer = (searches: number) => ({
  id: 'msg_up', type: 'message', role: 'assistant', model: 'up-model', content: [{ type: 'text', text: 'found' }], stop_reason: 'end_turn', stop_sequence: null,
  usage: { input_tokens: 100, output_tokens: 50, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, server_tool_use: { web_search_requests: searches } },
})

t.test('/v1/messages: server tools and tiers the model does not list and price get 400 naming them', async t => {
  const { url, msgUp } = await setup(t)
  const cases: Array<[unknown, RegExp]> = [
    [{ model: 'm/plain', tools: [{ name: 'f', input_schema: { type: 'object' } }, SEARCH] }, /tools\[1\].*web_search_20250305.*not available/],
    [{ model: 'm/unpriced', tools: [SEARCH] }, /tools\[0\].*no per-use price/],
    [{ model: 'm/search', tools: [{ type: 'web_fetch_20250910', name: 'web_fetch' }] }, /tools\[0\].*web_fetch_20250910/],
    [{ model: 'm/search', tools: [{ type: 'code_execution_20250825', name: 'code_execution' }] }, /tools\[0\].*code_execution/],
    [{ model: 'm/plain', service_tier: 'priority' }, /service_tier.*priority/],
    [{ model: 'm/unpriced', service_tier: 'priority' }, /service_tier.*priority/],
    [{ model: 'm/search', service_tier: 'flex' }, /service_tier.*flex/],
    // An MCP server entry has the upstream connect to a server the client names: the feature `mcp`.
    [{ model: 'm/plain', mcp_servers: [MCP_SERVER] }, /mcp_servers\[0\].*not available for model "m\/plain"/],
    [{ model: 'm/search', mcp_servers: [MCP_SERVER] }, /mcp_servers\[0\].*not available/],
    [{ model: 'm/mcp-unpriced', mcp_servers: [MCP_SERVER] }, /mcp_servers\[0\].*no per-use price/],
    [{ model: 'm/plain', mcp_servers: [MCP_SERVER], tools: [MCP_TOOLSET] }, /mcp_servers\[0\].*not available/],
    [{ model: 'm/mcp-unpriced', tools: [MCP_TOOLSET] }, /tools\[0\].*mcp_toolset.*no per-use price/],
  ]
  for (const [extra, message] of cases) {
    const r = await post(url, '/v1/messages', { max_tokens: 100, messages: [{ role: 'user', content: 'news?' }], ...extra as object })
    t.equal(r.status, 400, JSON.stringify(extra))
    const b = await r.json() as any
    t.equal(b.type, 'error')
    t.equal(b.error.type, 'invalid_request_error')
    t.match(b.error.message, message)
  }
  t.equal(msgUp.requests.length, 0, 'nothing was sent upstream')
  // Client tools (custom, Anthropic-defined client tools) and standard tiers are not per-use features.
  msgUp.handle((_req, res) => json(res, 200, messagesAnswer(0)))
  const ok = await post(url, '/v1/messages', { model: 'm/plain', max_tokens: 100, service_tier: 'standard_only', messages: [{ role: 'user', content: 'x' }], tools: [{ name: 'f', input_schema: { type: 'object' } }, { type: 'bash_20250124', name: 'bash' }, { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' }] })
  t.equal(ok.status, 200)
  // A model that lists and prices `mcp` lets MCP servers and toolsets through as sent.
  const mcp = await post(url, '/v1/messages', { model: 'm/mcp', max_tokens: 100, messages: [{ role: 'user', content: 'x' }], mcp_servers: [MCP_SERVER], tools: [MCP_TOOLSET] })
  t.equal(mcp.status, 200)
  t.same(msgUp.requests.at(-1)!.body.mcp_servers, [MCP_SERVER], 'forwarded as sent')
  t.same(msgUp.requests.at(-1)!.body.tools, [MCP_TOOLSET])
})

async function billedSearches (t: Test, ledger?: Ledger) {
  const { anthropic, msgUp, spent, charged } = await setup(t, ledger)
  msgUp.handle((req, res) => {
    if (!req.body.stream) return json(res, 200, messagesAnswer(3))
    return sse(res, [
      msgEvent('message_start', { message: { id: 'msg_up', type: 'message', role: 'assistant', model: 'up-model', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 100, output_tokens: 1, server_tool_use: { web_search_requests: 0 } } } }),
      msgEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      msgEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'found' } }),
      msgEvent('content_block_stop', { index: 0 }),
      msgEvent('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 50, server_tool_use: { web_search_requests: 2 } } }),
      msgEvent('message_stop', {}),
    ])
  })
  const body = { model: 'm/search', max_tokens: 100, messages: [{ role: 'user' as const, content: 'news?' }], tools: [SEARCH] }
  const calls = await Promise.all(Array.from({ length: 20 }, () => anthropic.messages.create(body as never)))
  t.equal(calls.length, 20)
  t.same(msgUp.requests[0]!.body.tools, [SEARCH], 'the tool is forwarded as sent')
  // (100 in × 1 + 50 out × 2) micro-units of tokens + 3 searches × 10 per 1000 (10 000 micro-units each).
  const json1 = 100 + 100 + 3 * 10_000
  t.equal((await charged(20)).filter(u => u.cost === json1).length, 20)
  t.equal(await spent(), 20 * json1)
  const stream = await anthropic.messages.create({ ...body, stream: true } as never) as unknown as AsyncIterable<unknown>
  for await (const _ of stream) { /* drained */ }
  const records = await charged(21)
  t.equal(records.filter(u => u.cost === 100 + 100 + 2 * 10_000).length, 1, 'the stream\'s final server_tool_use is billed')
  t.equal(await spent(), 20 * json1 + 20_200)
}

t.test('/v1/messages: web searches the upstream reports are billed per use, JSON and streamed, many at once (SQLite)', async t => billedSearches(t))

t.test('/v1/messages: the same on a PostgreSQL ledger', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  await billedSearches(t, await pgLedgers(t, url, 'per_use')(t))
})

t.test('the reservation covers max_uses searches: a balance that cannot pay for them gets 402', async t => {
  const { anthropic, ledger, msgUp } = await setup(t)
  msgUp.handle((_req, res) => json(res, 200, messagesAnswer(1)))
  await ledger.topUp(ORG, -(START - 40_000))
  const body = (maxUses: number) => ({ model: 'm/search', max_tokens: 100, messages: [{ role: 'user' as const, content: 'news?' }], tools: [{ ...SEARCH, max_uses: maxUses }] })
  const refused = await anthropic.messages.create(body(5) as never).then(() => null, e => e)
  t.equal(refused?.status, 402, '5 searches (50 000) do not fit in 40 000')
  t.equal(msgUp.requests.length, 0)
  await anthropic.messages.create(body(1) as never)
  t.equal(msgUp.requests.length, 1, 'one search does')
})

t.test('server tools sent to a model served only by upstreams of another protocol are dropped by translation, not refused', async t => {
  const { url, chatUp, charged } = await setup(t)
  chatUp.handle((_req, res) => json(res, 200, chatCompletion('ok', { prompt: 100, completion: 50, cached: 0 })))
  const viaResponses = await post(url, '/v1/responses', { model: 'c/plain', input: 'x', tools: [{ type: 'web_search' }, { type: 'function', name: 'f', parameters: { type: 'object' } }] })
  t.equal(viaResponses.status, 200)
  const viaMessages = await post(url, '/v1/messages', { model: 'c/plain', max_tokens: 100, messages: [{ role: 'user', content: 'x' }], tools: [SEARCH] })
  t.equal(viaMessages.status, 200)
  for (const r of chatUp.requests) t.notMatch(JSON.stringify(r.body.tools ?? []), /web_search/)
  t.same((await charged(2)).map(u => u.cost), [200, 200], 'tokens only')
})

t.test('/v1/messages: a priority tier bills its tokens at the multiplier', async t => {
  const { anthropic, msgUp, charged } = await setup(t)
  msgUp.handle((_req, res) => json(res, 200, messagesAnswer(0)))
  await anthropic.messages.create({ model: 'm/search', max_tokens: 100, messages: [{ role: 'user', content: 'x' }], service_tier: 'priority' } as never)
  t.equal(msgUp.requests[0]!.body.service_tier, 'priority')
  t.equal((await charged(1))[0]!.cost, 2 * (100 + 100))
})

const searchItem = (i: number) => ({ type: 'web_search_call', id: `ws_${i}`, status: 'completed', action: { type: 'search', query: 'news' } })

t.test('/v1/responses: built-in tools and tiers refused unless listed and priced; web_search_call items billed', async t => {
  const { url, openai, respUp, charged, spent } = await setup(t)
  const refused: Array<[unknown, RegExp]> = [
    [{ model: 'r/plain', tools: [{ type: 'web_search' }] }, /tools\[0\].*"web_search".*not available/],
    [{ model: 'r/plain', tools: [{ type: 'web_search_preview' }] }, /tools\[0\].*web_search_preview/],
    [{ model: 'r/search', tools: [{ type: 'image_generation' }] }, /tools\[0\].*image_generation.*no per-use price/],
    [{ model: 'r/search', tools: [{ type: 'function', name: 'f', parameters: {} }, { type: 'code_interpreter', container: { type: 'auto' } }] }, /tools\[1\].*code_interpreter/],
    [{ model: 'r/plain', service_tier: 'priority' }, /service_tier.*priority/],
  ]
  for (const [extra, message] of refused) {
    const r = await post(url, '/v1/responses', { input: 'news?', ...extra as object })
    t.equal(r.status, 400, JSON.stringify(extra))
    const b = await r.json() as any
    t.equal(b.error.code, 400, 'the error body of /v1/responses')
    t.match(b.error.message, message)
  }
  t.equal(respUp.requests.length, 0)

  const output = [searchItem(1), searchItem(2), ...(responsesResponse('found').output as unknown[])]
  const answer = { ...responsesResponse('found', responsesUsage({ input: 100, output: 50, cached: 0 })), output }
  respUp.handle((req, res) => {
    if (!req.body.stream) return json(res, 200, answer)
    return sse(res, [respEvent('response.created', 0, { response: { ...answer, status: 'in_progress', output: [], usage: null } }), respEvent('response.completed', 1, { response: answer })])
  })
  const calls = await Promise.all(Array.from({ length: 10 }, () => openai.responses.create({ model: 'r/search', input: 'news?', tools: [{ type: 'web_search' }] })))
  t.equal(calls.length, 10)
  const one = 100 + 100 + 2 * 10_000
  t.equal((await charged(10)).filter(u => u.cost === one).length, 10)
  await openai.responses.create({ model: 'r/search', input: 'news?', tools: [{ type: 'web_search' }], service_tier: 'priority' })
  t.equal((await charged(11)).filter(u => u.cost === 2 * 200 + 2 * 10_000).length, 1, 'tier multiplies the tokens, not the searches')
  const stream = await openai.responses.create({ model: 'r/search', input: 'news?', tools: [{ type: 'web_search' }], stream: true })
  for await (const _ of stream) { /* drained */ }
  t.equal((await charged(12)).filter(u => u.cost === one).length, 11, 'streamed: the completed response\'s items are billed')
  t.equal(await spent(), 11 * one + 2 * 200 + 2 * 10_000)
})

t.test('/v1/chat/completions: web_search_options and tiers refused unless listed and priced; one search billed per call', async t => {
  const { url, openai, chatUp, charged } = await setup(t)
  for (const [extra, message] of [
    [{ model: 'c/plain', web_search_options: {} }, /web_search_options.*no per-use price/],
    [{ model: 'c/plain', service_tier: 'priority' }, /service_tier.*priority/],
  ] as Array<[unknown, RegExp]>) {
    const r = await post(url, '/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], ...extra as object })
    t.equal(r.status, 400)
    const b = await r.json() as any
    t.equal(b.error.code, 400, 'the numeric-code body')
    t.match(b.error.message, message)
  }
  t.equal(chatUp.requests.length, 0)
  chatUp.handle((_req, res) => json(res, 200, chatCompletion('found', { prompt: 100, completion: 50, cached: 0 })))
  await Promise.all(Array.from({ length: 10 }, () => openai.chat.completions.create({ model: 'c/search', messages: [{ role: 'user', content: 'news?' }], web_search_options: {} })))
  t.same(chatUp.requests[0]!.body.web_search_options, {}, 'forwarded')
  t.equal((await charged(10)).filter(u => u.cost === 200 + 10_000).length, 10)
  await openai.chat.completions.create({ model: 'c/search', messages: [{ role: 'user', content: 'x' }], service_tier: 'priority' })
  t.equal((await charged(11)).filter(u => u.cost === 400).length, 1)
  // The cost metric counts what was billed: 10 × 0.0102 + 0.0004.
  const metrics = await (await fetch(`${url}/metrics`)).text()
  const line = metrics.split('\n').find(l => l.startsWith('gw_cost_total{') && l.includes('model="c/search"'))
  t.ok(line, 'a cost series for the model')
  t.ok(Math.abs(Number(line!.split(' ').at(-1)) - 0.1024) < 1e-9, String(line))
})
