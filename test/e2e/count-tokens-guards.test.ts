/**
 * POST /v1/messages/count_tokens runs the guards of /v1/messages through a listening gateway with
 * the built-in plugins on their default routes: the media URL policy and the model's modalities
 * (media-validation), the key's model list, 402 for an organization with nothing available
 * (balance; nothing held or charged, on SQLite and PostgreSQL), request quotas (without token
 * accrual); only the count's fields go upstream; and a 15 MB body is counted (sampled), not
 * tokenized whole.
 */
import t, { type Test } from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import { buildTestApp, listen, TEST_KEY, LIMITED_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json } from '../helpers/fake-upstream.ts'
import { openLedger, type Ledger } from '../../core/ledger/index.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import { MESSAGE_OVERHEAD } from '../../core/tokens/local-count.ts'

const ORG = 'org-test'

async function sqliteLedger (t: Test): Promise<Ledger> {
  const l = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await l.migrate()
  t.teardown(() => l.close())
  return l
}

async function setup (t: Test, opts: { pipeline?: unknown[], ledger?: Ledger, balance?: number } = {}) {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const ledger = opts.ledger ?? await sqliteLedger(t)
  await ledger.createOrganization(ORG)
  if ((opts.balance ?? 1_000_000) !== 0) await ledger.topUp(ORG, opts.balance ?? 1_000_000)
  const pipeline = opts.pipeline ?? [AUTH_ENTRY, { plugin: 'media-validation' }, { plugin: 'balance' }]
  const app = await buildTestApp({ ledger, doc: upstreamDoc(chatUp.origin, msgUp.origin), pipeline })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close() })
  msgUp.handle((_req, res) => json(res, 200, { input_tokens: 11 }))
  chatUp.handle((_req, res) => json(res, 500, { error: { message: 'a chat upstream is never asked to count' } }))
  const client = new Anthropic({ baseURL: url, apiKey: TEST_KEY, maxRetries: 0 })
  return { url, client, ledger, chatUp, msgUp }
}

const say = (text: string) => [{ role: 'user' as const, content: text }]

t.test('media-validation: a metadata-address image URL and an image to a text-only model are refused before any upstream', async t => {
  const { client, msgUp, chatUp } = await setup(t)
  const metadata = await client.messages.countTokens({
    model: 'msgvendor/msg-model',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'describe' }, { type: 'image', source: { type: 'url', url: 'http://169.254.169.254/latest/meta-data/iam' } }] }],
  }).then(() => null, e => e)
  t.ok(metadata instanceof Anthropic.BadRequestError, 'the link-local address is refused')
  t.equal(metadata?.error?.error?.type, 'invalid_request_error')
  t.match(metadata?.error?.error?.message, /messages\[0\]\.content\[1\]/)
  const inDocument = await client.messages.countTokens({
    model: 'msgvendor/msg-model',
    messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'http://127.0.0.1:6379/' } }] }],
  }).then(() => null, e => e)
  t.ok(inDocument instanceof Anthropic.BadRequestError, 'a loopback document URL is refused')
  const textOnly = await client.messages.countTokens({
    model: 'vendor/text-only',
    messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }],
  }).then(() => null, e => e)
  t.ok(textOnly instanceof Anthropic.BadRequestError, 'an image to a text-only model is refused')
  t.match(textOnly?.error?.error?.message, /does not accept images/)
  t.equal(msgUp.requests.length + chatUp.requests.length, 0, 'nothing reached an upstream')
  // A public URL on an image model still counts.
  t.same(await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'http://93.184.215.14/cat.png' } }] }] }), { input_tokens: 11 })
})

t.test('a key limited to other models gets 404, as on /v1/messages', async t => {
  const { url, msgUp } = await setup(t)
  const limited = new Anthropic({ baseURL: url, apiKey: LIMITED_KEY, maxRetries: 0 })
  const err = await limited.messages.countTokens({ model: 'msgvendor/msg-model', messages: say('x') }).then(() => null, e => e)
  t.ok(err instanceof Anthropic.NotFoundError)
  t.equal(msgUp.requests.length, 0)
})

t.test('only the count\'s fields are forwarded upstream', async t => {
  const { url, msgUp } = await setup(t)
  const body = {
    model: 'msgvendor/msg-model',
    system: 'Be brief.',
    messages: say('hello'),
    tools: [{ name: 't', input_schema: { type: 'object' } }],
    tool_choice: { type: 'auto' },
    thinking: { type: 'enabled', budget_tokens: 1024 },
    max_tokens: 100,
    stream: true,
    metadata: { user_id: 'u' },
    mcp_servers: [{ type: 'url', url: 'http://10.0.0.5/mcp', name: 'inside' }],
    service_tier: 'priority',
    anything: { else: 1 },
  }
  const r = await fetch(`${url}/v1/messages/count_tokens`, { method: 'POST', headers: { 'x-api-key': TEST_KEY, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  t.equal(r.status, 200)
  t.same(await r.json(), { input_tokens: 11 })
  t.same(Object.keys(msgUp.requests[0]!.body).sort(), ['messages', 'model', 'system', 'thinking', 'tool_choice', 'tools'])
  t.equal(msgUp.requests[0]!.body.model, 'up-model')
  t.same(msgUp.requests[0]!.body.thinking, body.thinking)
})

async function balanceSuite (t: Test, ledgerFor: (t: Test) => Promise<Ledger>) {
  t.test('nothing available: 402 in the messages shape, whether forwarded or counted locally', async t => {
    const { client, ledger, msgUp } = await setup(t, { ledger: await ledgerFor(t), balance: 0 })
    for (const model of ['msgvendor/msg-model', 'vendor/chat-model']) {
      const err = await client.messages.countTokens({ model, messages: say('x') }).then(() => null, e => e)
      t.equal(err?.status, 402, model)
      t.equal(err?.error?.error?.type, 'billing_error')
    }
    await ledger.topUp(ORG, -5)
    t.equal((await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: say('x') }).then(() => null, e => e))?.status, 402, 'a negative balance too')
    t.equal(msgUp.requests.length, 0)
  })

  t.test('money held by live reservations is not available', async t => {
    const { client, ledger } = await setup(t, { ledger: await ledgerFor(t), balance: 1000 })
    const hold = await ledger.reserve(ORG, 1000)
    t.ok(hold)
    t.equal((await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: say('x') }).then(() => null, e => e))?.status, 402)
    await ledger.release(hold!)
    t.same(await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: say('x') }), { input_tokens: 11 })
  })

  t.test('a solvent organization counts; many counts at once hold and charge nothing', async t => {
    const { client, ledger } = await setup(t, { ledger: await ledgerFor(t), balance: 1 })
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => client.messages.countTokens({ model: i % 2 ? 'msgvendor/msg-model' : 'vendor/chat-model', messages: say(`count ${i}`) })))
    t.equal(results.length, 40)
    t.same(await ledger.getBalance(ORG), { balance: 1, reserved: 0 })
    t.same(await ledger.listUsage({}), [], 'no usage record')
  })
}

t.test('balance, SQLite ledger', async t => balanceSuite(t, sqliteLedger))

t.test('balance, PostgreSQL ledger', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  await balanceSuite(t, pgLedgers(t, url, 'count_guard'))
})

t.test('balance in lease mode (PostgreSQL): 402 with nothing, counts beside a leased slice', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  const ledgerFor = pgLedgers(t, url, 'count_lease')
  const pipeline = [AUTH_ENTRY, { plugin: 'balance', config: { mode: 'lease' } }]
  const broke = await setup(t, { ledger: await ledgerFor(t), balance: 0, pipeline })
  t.equal((await broke.client.messages.countTokens({ model: 'msgvendor/msg-model', messages: say('x') }).then(() => null, e => e))?.status, 402)
  const { client, url: gw, ledger } = await setup(t, { ledger: await ledgerFor(t), balance: 1_000_000, pipeline })
  // A call leases a slice: the organization's money sits in this replica's hold.
  const r = await fetch(`${gw}/v1/messages`, { method: 'POST', headers: { 'x-api-key': TEST_KEY, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'msgvendor/msg-model', max_tokens: 5, messages: say('x') }) })
  t.equal(r.status, 200)
  t.ok((await ledger.getBalance(ORG))!.reserved > 0, 'a slice is held')
  t.same(await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: say('x') }), { input_tokens: 11 })
})

t.test('quota: a count uses up a request of the window, shared with /v1/messages; no tokens are added', async t => {
  const { client, url } = await setup(t, {
    pipeline: [AUTH_ENTRY, { plugin: 'quota', config: { limits: [{ scope: 'organization', window: 'day', requests: 3 }, { scope: 'key', window: 'day', tokens: 1 }] } }],
  })
  for (let i = 0; i < 2; i++) t.same(await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: say('x') }), { input_tokens: 11 })
  const limited = await client.messages.countTokens({ model: 'vendor/chat-model', messages: say('x') }).then(() => null, e => e)
  t.notOk(limited, 'the third request of the window is admitted (a count answered with a count of its own: no token accrual)')
  const fourth = await client.messages.countTokens({ model: 'msgvendor/msg-model', messages: say('x') }).then(() => null, e => e)
  t.ok(fourth instanceof Anthropic.RateLimitError, 'the fourth is refused')
  t.ok(Number(fourth?.headers?.get('retry-after')) > 0)
  const messages = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': TEST_KEY, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'msgvendor/msg-model', max_tokens: 5, messages: say('x') }) })
  t.equal(messages.status, 429, '/v1/messages shares the window the counts used')
})

t.test('a 15 MB body is counted by sampling: an approximate count, the rest of the body never tokenized', async t => {
  const { url, chatUp } = await setup(t)
  const sentence = 'The quick brown fox jumps over the lazy dog. '
  const text = sentence.repeat(Math.ceil(15_000_000 / sentence.length))
  const body = JSON.stringify({ model: 'vendor/chat-model', messages: say(text) })
  t.ok(body.length > 15_000_000)
  const r = await fetch(`${url}/v1/messages/count_tokens`, { method: 'POST', headers: { 'x-api-key': TEST_KEY, 'content-type': 'application/json' }, body })
  t.equal(r.status, 200)
  const { input_tokens: n } = await r.json() as { input_tokens: number }
  // o200k_base: 10 tokens per sentence, plus the message's framing.
  const exact = 10 * (text.length / sentence.length) + MESSAGE_OVERHEAD
  t.ok(Math.abs(n - exact) / exact < 0.02, `sampled count ${n} within 2% of ${exact}`)
  t.equal(chatUp.requests.length, 0)
  const health = await fetch(`${url}/healthz`)
  t.equal(health.status, 200)
})
