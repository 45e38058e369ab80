/**
 * Messages-API versions: Claude Code 2.1 puts a `system` turn inside `messages` (valid on
 * anthropic-version 2026-10-21, and on 2023-06-01 under the mid-conversation-system beta). Against
 * a fake upstream that checks requests as Anthropic's API does, each anthropic-compatible
 * provider gets the turn in the form its version takes (beta added, sent as is, or folded into
 * `system`), clients on either version line are served, and the translators carry the turn to
 * chat and Responses upstreams.
 */
import t from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import { buildTestApp, listen, TEST_KEY } from '../helpers/build-test-app.ts'
import { anthropicLike, startFakeUpstream, json, chatCompletion, responsesResponse, upstreamDoc } from '../helpers/fake-upstream.ts'
import { DEFAULT_ALLOWED_BETAS } from '../../providers/anthropic-compatible/schema.ts'

const MID = 'mid-conversation-system-2026-04-07'
// What Claude Code 2.1.332 sends on every call (captured from its traffic).
const CLAUDE_CODE_BETAS = 'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,per-turn-control-2026-07-01,mid-conversation-tool-changes-2026-07-01,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20,effort-2025-11-24'

// Claude Code's shape: the user's turn (a reminder block, then the prompt), then a system turn.
const system = [{ type: 'text' as const, text: 'You are an agent.' }]
const messages = [
  { role: 'user', content: [{ type: 'text', text: '<system-reminder>\nbe kind\n</system-reminder>' }, { type: 'text', text: 'say hello' }] },
  { role: 'system', content: [{ type: 'text', text: '# Environment\ncwd: /tmp', cache_control: { type: 'ephemeral' } }], output_config: { effort: 'medium' } },
] as unknown as Anthropic.MessageParam[]

t.test('the validating fake upstream, driven by @anthropic-ai/sdk directly', async t => {
  const up = await startFakeUpstream(anthropicLike())
  t.teardown(() => up.close())
  // The SDK (1.x) sends 2026-10-21 unless told otherwise.
  const client = new Anthropic({ baseURL: up.origin, apiKey: 'sk-ant-x', maxRetries: 0, defaultHeaders: { 'anthropic-version': '2023-06-01' } })
  const plain = await client.messages.create({ model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
  t.same(plain.content, [{ type: 'text', text: 'Echo: hi' }])
  const streamed = await client.messages.stream({ model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }).finalMessage()
  t.same(streamed.content, [{ type: 'text', text: 'Echo: hi' }])
  const refused = await client.messages.create({ model: 'm', max_tokens: 64, system, messages }).catch(e => e)
  t.ok(refused instanceof Anthropic.BadRequestError, 'a system turn on 2023-06-01 without the beta is refused')
  t.equal(refused.error?.error?.message, "messages.1.role: Input should be 'user' or 'assistant'")
  const beta = await client.beta.messages.create({ model: 'm', max_tokens: 64, system, messages: messages as never, betas: [MID] })
  t.same(beta.content, [{ type: 'text', text: 'Echo: <system-reminder>\nbe kind\n</system-reminder> say hello' }], 'accepted under the beta')
  const v2026 = new Anthropic({ baseURL: up.origin, apiKey: 'sk-ant-x', maxRetries: 0, defaultHeaders: { 'anthropic-version': '2026-10-21' } })
  t.equal((await v2026.messages.create({ model: 'm', max_tokens: 64, system, messages })).stop_reason, 'end_turn', 'accepted on 2026-10-21')
  const unknownBeta = await client.beta.messages.create({ model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], betas: ['made-up-2020-01-01'] }).catch(e => e)
  t.ok(unknownBeta instanceof Anthropic.BadRequestError, 'an unknown beta is refused')
  const badVersion = new Anthropic({ baseURL: up.origin, apiKey: 'sk-ant-x', maxRetries: 0, defaultHeaders: { 'anthropic-version': '2024-01-01' } })
  t.ok(await badVersion.messages.create({ model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }).catch(e => e) instanceof Anthropic.BadRequestError)
  const deferred = { name: 'later', input_schema: { type: 'object' as const }, defer_loading: true }
  const noBeta = await client.messages.create({ model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], tools: [deferred] }).catch(e => e)
  t.equal(noBeta.error?.error?.message, 'tools.0.custom.defer_loading: Extra inputs are not permitted', 'a deferred tool needs its beta')
  t.equal((await client.beta.messages.create({ model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], tools: [deferred], betas: ['advanced-tool-use-2025-11-20'] })).stop_reason, 'end_turn')
  t.same(await client.messages.countTokens({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), { input_tokens: 4 })
})

t.test('a system turn reaches each messages upstream in the form its version takes', async t => {
  const up = await startFakeUpstream(anthropicLike())
  const chatUp = await startFakeUpstream((_req, res) => json(res, 200, chatCompletion('from chat')))
  const respUp = await startFakeUpstream((_req, res) => json(res, 200, responsesResponse('from responses')))
  const doc = upstreamDoc(chatUp.origin, up.origin, [
    { id: 'msgvendor/v2026', deployments: [{ provider: 'up-2026', model: 'up-model' }] },
    { id: 'msgvendor/fold', deployments: [{ provider: 'up-fold', model: 'up-model' }] },
    { id: 'msgvendor/nobeta', deployments: [{ provider: 'up-nobeta', model: 'up-model' }] },
    { id: 'vendor/responses', deployments: [{ provider: 'up-resp', model: 'up-model' }] },
  ])
  ;(doc.providers as unknown[]).push(
    { name: 'up-2026', adapter: 'anthropic-compatible', config: { baseUrl: up.origin, apiKey: 'k', version: '2026-10-21' } },
    // An upstream that knows no 2026 line and no beta for it: the turn must be folded.
    { name: 'up-fold', adapter: 'anthropic-compatible', config: { baseUrl: up.origin, apiKey: 'k', systemMessages: 'fold' } },
    { name: 'up-nobeta', adapter: 'anthropic-compatible', config: { baseUrl: up.origin, apiKey: 'k', forwardBeta: false } },
    { name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${respUp.origin}/v1`, apiKey: 'k' } },
  )
  const app = await buildTestApp({ doc })
  t.teardown(async () => { await app.close(); await up.close(); await chatUp.close(); await respUp.close() })
  const base = await listen(app)
  const v2023 = new Anthropic({ baseURL: base, apiKey: TEST_KEY, maxRetries: 0, defaultHeaders: { 'anthropic-version': '2023-06-01' } })
  const v2026 = new Anthropic({ baseURL: base, authToken: TEST_KEY, apiKey: null, maxRetries: 0, defaultHeaders: { 'anthropic-version': '2026-10-21' } })
  const echoed = 'Echo: <system-reminder>\nbe kind\n</system-reminder> say hello'

  for (const [name, client] of [['2023-06-01', v2023], ['2026-10-21', v2026]] as const) {
    t.test(`client on ${name}`, async t => {
      for (const stream of [false, true]) {
        const send = (model: string) => stream
          ? client.messages.stream({ model, max_tokens: 64, system, messages }).finalMessage()
          : client.messages.create({ model, max_tokens: 64, system, messages })
        const n = up.requests.length
        t.same((await send('msgvendor/msg-model')).content, [{ type: 'text', text: echoed }], `2023-06-01 upstream (stream ${stream})`)
        let r = up.requests[n]
        t.equal(r.headers['anthropic-version'], '2023-06-01')
        t.ok(String(r.headers['anthropic-beta']).split(',').includes(MID), 'the beta is added')
        t.same(r.body.messages.map((m: { role: string }) => m.role), ['user', 'system'], 'the turn is sent as is')
        t.same(r.body.messages[1].output_config, { effort: 'medium' })

        t.same((await send('msgvendor/nobeta')).content, [{ type: 'text', text: echoed }], 'forwardBeta false still gets the beta the body needs')
        t.equal(up.requests[n + 1].headers['anthropic-beta'], MID)

        t.same((await send('msgvendor/v2026')).content, [{ type: 'text', text: echoed }], `2026-10-21 upstream (stream ${stream})`)
        r = up.requests[n + 2]
        t.equal(r.headers['anthropic-version'], '2026-10-21')
        t.notOk(String(r.headers['anthropic-beta'] ?? '').split(',').includes(MID), 'no beta needed on the 2026 line')
        t.same(r.body.messages.map((m: { role: string }) => m.role), ['user', 'system'])

        t.same((await send('msgvendor/fold')).content, [{ type: 'text', text: echoed }], `folding upstream (stream ${stream})`)
        r = up.requests[n + 3]
        t.same(r.body.messages.map((m: { role: string }) => m.role), ['user'], 'the turn left the list')
        t.same(r.body.system, [{ type: 'text', text: 'You are an agent.' }, { type: 'text', text: '# Environment\ncwd: /tmp', cache_control: { type: 'ephemeral' } }], 'and closes the system prompt')
      }
      const counted = await client.messages.countTokens({ model: 'msgvendor/msg-model', system, messages })
      t.ok(counted.input_tokens > 0, 'count_tokens with a system turn is forwarded, beta added')
      t.ok(String(up.requests.at(-1)!.headers['anthropic-beta']).split(',').includes(MID))
      t.ok((await client.messages.countTokens({ model: 'msgvendor/fold', system, messages })).input_tokens > 0)
      t.same(up.requests.at(-1)!.body.messages.map((m: { role: string }) => m.role), ['user'])
    })
  }

  t.test('translated: the turn reaches a chat upstream as a system message in place, a Responses upstream in its instructions', async t => {
    const chat = await v2026.messages.create({ model: 'vendor/chat-model', max_tokens: 64, system, messages })
    t.same(chat.content, [{ type: 'text', text: 'from chat' }])
    const sent = chatUp.requests.at(-1)!.body.messages as Array<{ role: string, content: unknown }>
    t.same(sent.map(m => m.role), ['system', 'user', 'system'])
    t.equal(sent[2].content, '# Environment\ncwd: /tmp')
    const resp = await v2023.messages.create({ model: 'vendor/responses', max_tokens: 64, system, messages })
    t.same(resp.content, [{ type: 'text', text: 'from responses' }])
    const body = respUp.requests.at(-1)!.body
    t.equal(body.instructions, 'You are an agent.\n\n# Environment\ncwd: /tmp', 'system prompt and system turn, in order')
    t.same(body.input.map((i: { role: string }) => i.role), ['user'])
  })

  t.test("Claude Code's betas all pass the default allow-list", async t => {
    for (const b of CLAUDE_CODE_BETAS.split(',')) t.ok(DEFAULT_ALLOWED_BETAS.includes(b), b)
    const res = await fetch(`${base}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01', 'anthropic-beta': CLAUDE_CODE_BETAS, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'msgvendor/msg-model', max_tokens: 64, system, messages }),
    })
    t.equal(res.status, 200)
    await res.text()
    t.equal(up.requests.at(-1)!.headers['anthropic-beta'], `${CLAUDE_CODE_BETAS},${MID}`)
  })
})
