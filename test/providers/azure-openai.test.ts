/**
 * @module test/providers/azure-openai – the Azure OpenAI adapter through a listening gateway with
 * the official openai SDK as the client, against the recording fake Azure resource (which checks
 * the path, the api-version query, the deployment and the credentials): the v1 API and the dated
 * deployment paths, chat JSON and streamed with usage, a tool round trip, the Responses API,
 * content-filter answers and refusals, Entra ID tokens (shared, refreshed before expiry, one
 * refresh at a time, a refused one dropped), a wrong key (502, logged), and config errors.
 */
import t, { type Test } from 'tap'
import pino from 'pino'
import OpenAI, { AzureOpenAI } from 'openai'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { startFakeAzure, AZURE_TEST_KEY, ENTRA_TEST_APP, type FakeAzure, type FakeAzureOptions } from '../helpers/fake-azure.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { until } from '../helpers/until.ts'

const WEATHER = { type: 'function' as const, function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }

interface Setup { fake: FakeAzure, ledger: Ledger, openai: OpenAI, logs: Array<Record<string, unknown>> }

/** A gateway with one Azure provider (`config` over the fake's endpoint) serving `azure/gpt` and `azure/o4`. */
async function setup (t: Test, config: Record<string, unknown> | ((fake: FakeAzure) => Record<string, unknown>), fakeOpts: FakeAzureOptions = {}): Promise<Setup> {
  const fake = await startFakeAzure(fakeOpts)
  t.teardown(() => fake.close())
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  const logs: Array<Record<string, unknown>> = []
  const price = { input: 1, cachedInput: 0.5, output: 2 }
  const app = await buildTestApp({
    ledger,
    logger: pino({ level: 'warn' }, { write: (s: string) => { logs.push(JSON.parse(s)) } }),
    pipeline: [AUTH_ENTRY, { plugin: 'balance', config: { enforce: false } }],
    doc: {
      providers: [{ name: 'azure', adapter: 'azure-openai', config: { endpoint: fake.origin, ...(typeof config === 'function' ? config(fake) : config) } }],
      models: [
        { id: 'azure/gpt', price, supported_parameters: ['temperature', 'max_tokens', 'tools', 'tool_choice', 'stream', 'stop'], deployments: [{ provider: 'azure', model: 'gpt-4o-prod' }] },
        { id: 'azure/missing', price, deployments: [{ provider: 'azure', model: 'no-such-deployment' }] },
      ],
    },
  })
  t.teardown(async () => { await app.close(); await ledger.close() })
  const base = await listen(app)
  return { fake, ledger, logs, openai: new OpenAI({ baseURL: `${base}/v1`, apiKey: TEST_KEY, maxRetries: 0 }) }
}

async function recordsOf (ledger: Ledger, n: number): Promise<UsageRecord[]> {
  await until(async () => (await ledger.listUsage({})).length >= n)
  return ledger.listUsage({})
}

const lastCall = (fake: FakeAzure) => fake.calls[fake.calls.length - 1]
const KEY = { apiKey: AZURE_TEST_KEY }
const DATED = { apiKey: AZURE_TEST_KEY, apiVersion: '2024-10-21' }

t.test('the fake takes what the official AzureOpenAI client sends, and refuses a wrong version', async t => {
  const fake = await startFakeAzure()
  t.teardown(() => fake.close())
  const client = new AzureOpenAI({ endpoint: fake.origin, apiKey: AZURE_TEST_KEY, apiVersion: '2024-10-21', maxRetries: 0 })
  const chat = await client.chat.completions.create({ model: 'gpt-4o-prod', messages: [{ role: 'user', content: 'Hi' }] })
  t.equal(chat.choices[0].message.content, 'Hello from gpt-4o-prod')
  t.equal(lastCall(fake).path, '/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21')
  const resp = await client.responses.create({ model: 'gpt-4o-prod', input: 'Hi' })
  t.equal(resp.output_text, 'Hello from gpt-4o-prod')
  t.equal(lastCall(fake).path, '/openai/responses?api-version=2024-10-21')
  const old = new AzureOpenAI({ endpoint: fake.origin, apiKey: AZURE_TEST_KEY, apiVersion: '2023-01-01', maxRetries: 0 })
  const refused = await old.chat.completions.create({ model: 'gpt-4o-prod', messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e)
  t.equal((refused as { status?: number }).status, 404)
})

t.test('chat JSON on the v1 API: api-key header, no api-version, deployment as the body model; usage billed', async t => {
  const { fake, ledger, openai } = await setup(t, KEY)
  const c = await openai.chat.completions.create({ model: 'azure/gpt', max_tokens: 50, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }] })
  t.equal(c.choices[0].message.content, 'Hello from gpt-4o-prod')
  t.equal(c.choices[0].finish_reason, 'stop')
  t.same(c.usage && { p: c.usage.prompt_tokens, c: c.usage.completion_tokens }, { p: 12, c: 5 })
  const req = lastCall(fake)
  t.equal(req.path, '/openai/v1/chat/completions')
  t.equal(req.headers['api-key'], AZURE_TEST_KEY)
  t.equal(req.headers.authorization, undefined, 'the client\'s gateway key is not forwarded')
  t.equal(req.body.model, 'gpt-4o-prod')
  t.equal(req.body.max_tokens, 50, 'a chat client\'s own field is passed as sent')
  const [rec] = await recordsOf(ledger, 1)
  t.equal(rec.inputTokens, 12)
  t.equal(rec.cachedInputTokens, 4)
  t.equal(rec.outputTokens, 5)
  t.equal(rec.estimated, false)
})

t.test('chat stream on a deployment path with usage: the filter-only first chunk is harmless, usage billed', async t => {
  const { fake, ledger, openai } = await setup(t, DATED)
  const stream = await openai.chat.completions.create({ model: 'azure/gpt', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Hello' }] })
  let text = ''
  let finish: string | null = null
  let usage: OpenAI.CompletionUsage | undefined
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? ''
    finish = chunk.choices[0]?.finish_reason ?? finish
    if (chunk.usage) usage = chunk.usage
  }
  t.equal(text, 'Hello from gpt-4o-prod')
  t.equal(finish, 'stop')
  t.same(usage && [usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details?.cached_tokens], [12, 5, 4])
  const req = lastCall(fake)
  t.equal(req.path, '/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21')
  t.equal(req.headers['api-key'], AZURE_TEST_KEY)
  t.equal(req.headers.accept, 'text/event-stream')
  t.same(req.body.stream_options, { include_usage: true })
  const [rec] = await recordsOf(ledger, 1)
  t.same([rec.inputTokens, rec.cachedInputTokens, rec.outputTokens, rec.estimated], [12, 4, 5, false])
})

t.test('a stream whose client did not ask for usage is still billed from Azure\'s usage chunk', async t => {
  const { fake, ledger, openai } = await setup(t, DATED)
  const stream = await openai.chat.completions.create({ model: 'azure/gpt', stream: true, messages: [{ role: 'user', content: 'Hello' }] })
  let sawUsage = false
  for await (const chunk of stream) if (chunk.usage) sawUsage = true
  t.notOk(sawUsage, 'no usage chunk reaches a client that did not ask')
  t.same(lastCall(fake).body.stream_options, { include_usage: true }, 'the gateway asked Azure for it')
  const [rec] = await recordsOf(ledger, 1)
  t.same([rec.inputTokens, rec.outputTokens, rec.estimated], [12, 5, false])
})

t.test('tool round trip, streamed then JSON, on a deployment path', async t => {
  const { fake, openai } = await setup(t, DATED)
  const first = openai.chat.completions.stream({ model: 'azure/gpt', tools: [WEATHER], messages: [{ role: 'user', content: 'Weather in Paris?' }] })
  const done = await first.finalChatCompletion()
  const call = done.choices[0].message.tool_calls?.[0]
  t.equal(done.choices[0].finish_reason, 'tool_calls')
  t.ok(call && call.type === 'function' && call.function.name === 'get_weather' && call.id === 'call_az1', 'the tool call')
  t.equal(call?.type === 'function' && call.function.arguments, '{"city":"Paris"}', 'its arguments assembled')
  t.same(lastCall(fake).body.tools, [WEATHER], 'the tools reach Azure as sent')
  const second = await openai.chat.completions.create({
    model: 'azure/gpt', tools: [WEATHER],
    messages: [{ role: 'user', content: 'Weather in Paris?' }, done.choices[0].message, { role: 'tool', tool_call_id: 'call_az1', content: 'sunny, 21C' }],
  })
  t.equal(second.choices[0].message.content, 'Tool said: sunny, 21C')
  const sent = lastCall(fake).body
  t.same(sent.messages[1].tool_calls, [{ id: 'call_az1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }])
  t.same(sent.messages[2], { role: 'tool', tool_call_id: 'call_az1', content: 'sunny, 21C' })
  t.equal(lastCall(fake).path, '/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21')
})

t.test('Responses API on the v1 API and on a dated version, JSON and streamed', async t => {
  for (const [config, path] of [[{ ...KEY, api: 'responses' }, '/openai/v1/responses'], [{ ...DATED, apiVersion: '2025-04-01-preview', api: 'responses' }, '/openai/responses?api-version=2025-04-01-preview']] as const) {
    await t.test(path, async t => {
      const { fake, ledger, openai } = await setup(t, config)
      const r = await openai.responses.create({ model: 'azure/gpt', input: 'Hello', instructions: 'Be brief.' })
      t.equal(r.output_text, 'Hello from gpt-4o-prod')
      t.equal(r.usage?.input_tokens, 20)
      const req = lastCall(fake)
      t.equal(req.path, path)
      t.equal(req.headers['api-key'], AZURE_TEST_KEY)
      t.equal(req.body.model, 'gpt-4o-prod', 'the deployment travels as the model')
      t.equal(req.body.store, false)
      const stream = await openai.responses.create({ model: 'azure/gpt', input: 'Hello', stream: true })
      let text = ''
      let completed: OpenAI.Responses.Response | undefined
      for await (const ev of stream) {
        if (ev.type === 'response.output_text.delta') text += ev.delta
        if (ev.type === 'response.completed') completed = ev.response
      }
      t.equal(text, 'Hello from gpt-4o-prod')
      t.equal(completed?.usage?.output_tokens, 6)
      t.equal(lastCall(fake).path, path)
      const recs = await recordsOf(ledger, 2)
      t.same(recs.map(r => [r.inputTokens, r.cachedInputTokens, r.outputTokens]), [[20, 8, 6], [20, 8, 6]])
    })
  }
})

t.test('a chat client reaches an Azure Responses deployment through the translation', async t => {
  const { fake, openai } = await setup(t, { ...KEY, api: 'responses' })
  const c = await openai.chat.completions.create({ model: 'azure/gpt', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }] })
  t.equal(c.choices[0].message.content, 'Hello from gpt-4o-prod')
  t.equal(lastCall(fake).path, '/openai/v1/responses')
  t.equal(lastCall(fake).body.instructions, 'Be brief.')
})

t.test('finish_reason content_filter passes through, JSON and streamed', async t => {
  const { openai } = await setup(t, KEY)
  const c = await openai.chat.completions.create({ model: 'azure/gpt', messages: [{ role: 'user', content: 'FILTER_OUTPUT please' }] })
  t.equal(c.choices[0].finish_reason, 'content_filter')
  t.equal(c.choices[0].message.content, 'Partial')
  const stream = await openai.chat.completions.create({ model: 'azure/gpt', stream: true, messages: [{ role: 'user', content: 'FILTER_OUTPUT please' }] })
  let finish: string | null = null
  for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish
  t.equal(finish, 'content_filter')
})

t.test('Azure\'s content-filter 400 → a 400 saying so, with the categories, Azure\'s links left out; no failover', async t => {
  const { fake, openai } = await setup(t, KEY)
  const err = await openai.chat.completions.create({ model: 'azure/gpt', messages: [{ role: 'user', content: 'BLOCK_ME now' }] }).catch((e: unknown) => e)
  t.ok(err instanceof OpenAI.BadRequestError, 'the SDK raises its 400 error')
  const e = err as InstanceType<typeof OpenAI.BadRequestError>
  t.equal(e.status, 400)
  t.match(e.message, /content_filter: the provider's content filter blocked the prompt \(violence\)/)
  t.notMatch(e.message, /microsoft|https?:/i)
  t.same((e.error as { metadata?: unknown }).metadata, { reason: 'content_filter', categories: ['violence'] })
  t.equal(fake.calls.length, 1)
  const r = await openai.responses.create({ model: 'azure/gpt', input: 'BLOCK_ME' }).catch((x: unknown) => x)
  t.equal((r as { status?: number }).status, 400, 'a Responses client gets the 400 too')
})

t.test('a wrong key → 502 for the client, logged at error; an unknown deployment → 502', async t => {
  const { fake, openai, logs } = await setup(t, { apiKey: 'wrong-key' })
  const err = await openai.chat.completions.create({ model: 'azure/gpt', messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e)
  t.equal((err as { status?: number }).status, 502)
  t.equal(fake.refused, 1)
  const loud = logs.find(l => l.msg === 'upstream refused our provider credentials')
  t.ok(loud, 'logged')
  t.equal(loud?.level, 50, 'at error level')
  t.equal(loud?.status, 401)
  t.notMatch(JSON.stringify(logs), /wrong-key/, 'the key itself is never logged')
  fake.calls.length = 0
  const { openai: good } = await setup(t, KEY)
  const missing = await good.chat.completions.create({ model: 'azure/missing', messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e)
  t.equal((missing as { status?: number }).status, 502)
})

/** A gateway whose Azure provider authenticates with Entra ID at the fake's token endpoint. */
const setupEntra = (t: Test, fakeOpts: FakeAzureOptions = {}): Promise<Setup> =>
  setup(t, fake => ({ entra: { ...ENTRA_TEST_APP, tokenUrl: fake.tokenUrl } }), fakeOpts)

const hi = (openai: OpenAI) => openai.chat.completions.create({ model: 'azure/gpt', messages: [{ role: 'user', content: 'Hi' }] })

t.test('Entra ID: one token shared by calls, replaced before it expires by one request, never the api-key', async t => {
  // 6-second tokens: each is replaced halfway through its life (sooner than the 5-minute margin).
  const { fake, openai } = await setupEntra(t, { tokenSeconds: 6 })
  const until = (at: number) => new Promise(resolve => setTimeout(resolve, Math.max(0, at - Date.now())))
  await Promise.all([hi(openai), hi(openai), hi(openai), hi(openai), hi(openai)])
  await hi(openai)
  t.equal(fake.tokenRequests.length, 1, 'six calls, five of them concurrent, share one token request')
  const auths = new Set(fake.calls.map(c => c.headers.authorization))
  t.equal(auths.size, 1)
  t.match([...auths][0], /^Bearer entra-/)
  t.ok(fake.calls.every(c => c.headers['api-key'] === undefined), 'no api-key header')
  const first = fake.tokenIssuedAt[0]!
  await until(first + 3_300)
  await Promise.all([hi(openai), hi(openai), hi(openai)])
  t.equal(fake.tokenRequests.length, 2, 'halfway through its life, while still valid, replaced by one request for three calls')
  t.not(fake.calls[fake.calls.length - 1]!.headers.authorization, [...auths][0], 'the new token is sent')
  await until(first + 6_300)
  const after = await hi(openai)
  t.equal(after.choices[0].message.content, 'Hello from gpt-4o-prod', 'a call after the first token expired succeeds')
  t.ok(fake.tokenRequests.length >= 2)
  t.equal(fake.refused, 0, 'no call was sent with an expired token')
})

t.test('Entra ID: a failed token request → 502 (logged), not kept: the next call asks again', async t => {
  const { fake, openai, logs } = await setupEntra(t)
  fake.failTokens(1)
  const err = await hi(openai).catch((e: unknown) => e)
  t.equal((err as { status?: number }).status, 502)
  t.equal(fake.calls.length, 0, 'nothing sent to Azure without a token')
  t.match(JSON.stringify(logs), /Entra token endpoint answered 400: invalid_client/)
  t.notMatch(JSON.stringify(logs), new RegExp(ENTRA_TEST_APP.clientSecret), 'the secret is never logged')
  const ok = await hi(openai)
  t.equal(ok.choices[0].message.content, 'Hello from gpt-4o-prod')
  t.equal(fake.tokenRequests.length, 2)
})

t.test('Entra ID: a token Azure refuses (401) is dropped: the call fails with 502, the next gets a new token', async t => {
  const { fake, openai, logs } = await setupEntra(t)
  await hi(openai)
  fake.revokeTokens()
  const err = await hi(openai).catch((e: unknown) => e)
  t.equal((err as { status?: number }).status, 502)
  t.ok(logs.some(l => l.msg === 'upstream refused our provider credentials' && l.level === 50), 'logged at error')
  const ok = await hi(openai)
  t.equal(ok.choices[0].message.content, 'Hello from gpt-4o-prod')
  t.equal(fake.tokenRequests.length, 2)
})

t.test('Entra ID on a deployment path with the Responses API', async t => {
  const { fake, openai } = await setup(t, f => ({ apiVersion: '2025-04-01-preview', api: 'responses', entra: { ...ENTRA_TEST_APP, tokenUrl: f.tokenUrl } }))
  const r = await openai.responses.create({ model: 'azure/gpt', input: 'Hello' })
  t.equal(r.output_text, 'Hello from gpt-4o-prod')
  t.equal(lastCall(fake).path, '/openai/responses?api-version=2025-04-01-preview')
  t.match(String(lastCall(fake).headers.authorization), /^Bearer entra-/)
})

t.test('config errors stop start-up with a message naming the provider', async t => {
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['neither key nor entra', { endpoint: 'https://r.openai.azure.com' }, /provider azure: set either apiKey or entra/],
    ['both key and entra', { endpoint: 'https://r.openai.azure.com', apiKey: 'k', entra: ENTRA_TEST_APP }, /set either apiKey or entra/],
    ['neither endpoint nor resource', { apiKey: 'k' }, /set either endpoint or resource/],
    ['both endpoint and resource', { apiKey: 'k', endpoint: 'https://r.openai.azure.com', resource: 'r' }, /set either endpoint or resource/],
    ['an endpoint with /openai', { apiKey: 'k', endpoint: 'https://r.openai.azure.com/openai/v1' }, /without \/openai/],
    ['a resource name with a dot', { apiKey: 'k', resource: 'r.example' }, /resource/],
    ['an entra block without a secret', { endpoint: 'https://r.openai.azure.com', entra: { tenantId: 't', clientId: 'c' } }, /clientSecret/],
  ]
  for (const [what, config, re] of cases) {
    await t.rejects(buildTestApp({ doc: { providers: [{ name: 'azure', adapter: 'azure-openai', config }], models: [{ id: 'azure/gpt', deployments: [{ provider: 'azure', model: 'd' }] }] } }), re, what)
  }
  const ok = await buildTestApp({ doc: { providers: [{ name: 'azure', adapter: 'azure-openai', config: { resource: 'my-res', apiKey: 'k' } }], models: [{ id: 'azure/gpt', deployments: [{ provider: 'azure', model: 'd' }] }] } })
  t.ok(ok, 'a resource name alone is enough')
  await ok.close()
})

t.test('a translated request carries its output cap as max_completion_tokens (the default field)', async t => {
  const { fake, openai } = await setup(t, KEY)
  const r = await openai.responses.create({ model: 'azure/gpt', input: 'Hello', max_output_tokens: 40 })
  t.equal(r.output_text, 'Hello from gpt-4o-prod')
  const body = lastCall(fake).body
  t.equal(lastCall(fake).path, '/openai/v1/chat/completions')
  t.equal(body.max_completion_tokens, 40)
  t.equal(body.max_tokens, undefined)
})
