/**
 * @module test/providers/carried-thinking – a conversation that moves from a Gemini model to a
 * Claude one (Anthropic's API, Claude on Vertex, Claude on Bedrock): the thinking blocks that carry
 * Gemini's thought signatures (or a Responses upstream's reasoning) are the gateway's own carriers,
 * which Claude refuses as signatures it never issued. They must not reach a Claude upstream, and a
 * tool loop whose last turn lost its leading thinking goes with thinking off; Claude's own signed
 * thinking still goes back byte for byte.
 */
import t from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import {
  startFakeGemini, startFakeUpstream, startFakeVertex, startFakeBedrock, json, GEMINI_TEST_KEY, BEDROCK_TEST_CREDENTIALS, type Recorded,
} from '../../testing.ts'
import { withoutCarriedThinking } from '../../index.ts'
import { encodeReasoning } from '../../providers/protocols/thinking.ts'

const TOOL = { name: 'get_weather', description: 'Weather in a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } }
const PARAMS = ['max_tokens', 'tools', 'tool_choice', 'stream', 'thinking', 'temperature']
const price = { input: 1, output: 2 }
const CLAUDE_SIG = 'EqQBCkYIBRgCKkBclaudeSignedThis0123456789abcdef'

t.test('withoutCarriedThinking: what goes, what stays', async t => {
  const gemini = 'gw-gemini:' + Buffer.from(JSON.stringify({ s: 'sig', call: 'toolu_1' })).toString('base64')
  const reasoning = encodeReasoning({ encrypted_content: 'enc', summary: [] })
  const plain = { model: 'm', thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: [{ type: 'thinking', thinking: 't', signature: CLAUDE_SIG }, { type: 'text', text: 'ok' }] }] }
  t.equal(withoutCarriedThinking(plain), plain, 'nothing carried: the same object')
  t.equal(withoutCarriedThinking({ messages: 'nope' }).messages, 'nope', 'a malformed body is left to the upstream to refuse')

  const loop = {
    model: 'm', max_tokens: 100, thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [
      { role: 'user', content: 'Paris?' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: '', signature: gemini }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
    ],
  }
  const clean = withoutCarriedThinking(loop)
  t.same(clean.messages[1], { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] })
  t.notOk('thinking' in clean, 'the tool loop\'s last turn lost its leading thinking: thinking off for the call')
  t.equal(loop.messages[1].content.length, 2, 'the given body is not changed')

  const earlier = {
    model: 'm', thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'r', signature: reasoning }] },
      { role: 'user', content: 'b' },
      { role: 'assistant', content: [{ type: 'text', text: 'c' }] },
      { role: 'user', content: [{ type: 'text', text: 'd' }] },
    ],
  }
  const e = withoutCarriedThinking(earlier)
  t.same(e.messages, [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }, { role: 'assistant', content: [{ type: 'text', text: 'c' }] }, { role: 'user', content: [{ type: 'text', text: 'd' }] }],
    'a turn of carried thinking alone goes (string turns stay as they are)')
  t.same(e.thinking, { type: 'enabled', budget_tokens: 1024 }, 'an earlier turn\'s reasoning dropped: thinking stays on')
})

t.test('Gemini first, then Claude on Anthropic\'s API, Vertex and Bedrock: no carried signature reaches Claude', async t => {
  const gemini = await startFakeGemini()
  const anthropicUp = await startFakeUpstream()
  const vertex = await startFakeVertex()
  const bedrock = await startFakeBedrock()
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: {
      providers: [
        { name: 'google', adapter: 'gemini', config: { apiKey: GEMINI_TEST_KEY, baseUrl: gemini.origin } },
        { name: 'anthropic', adapter: 'anthropic-compatible', config: { apiKey: 'sk-ant-test', baseUrl: anthropicUp.origin } },
        { name: 'vertex', adapter: 'vertex', config: { project: vertex.project, location: vertex.location, baseUrl: vertex.origin, credentials: vertex.serviceAccount } },
        { name: 'aws', adapter: 'bedrock', config: { region: 'us-east-1', baseUrl: bedrock.origin, credentials: { ...BEDROCK_TEST_CREDENTIALS } } },
      ],
      models: [
        { id: 'google/pro3', price, supported_parameters: PARAMS, deployments: [{ provider: 'google', model: 'gemini-3-pro-preview' }] },
        { id: 'anthropic/sonnet', price, supported_parameters: PARAMS, deployments: [{ provider: 'anthropic', model: 'claude-sonnet-4-5' }] },
        { id: 'vertex/sonnet', price, supported_parameters: PARAMS, deployments: [{ provider: 'vertex', model: 'claude-sonnet-4-5@20250929' }] },
        { id: 'aws/sonnet', price, supported_parameters: PARAMS, deployments: [{ provider: 'aws', model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' }] },
      ],
    },
  })
  t.teardown(async () => { await app.close(); await Promise.all([gemini.close(), anthropicUp.close(), vertex.close(), bedrock.close()]) })
  const base = await listen(app)
  const client = new Anthropic({ baseURL: base, apiKey: TEST_KEY, maxRetries: 0 })
  anthropicUp.handle((_req, res) => json(res, 200, {
    id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'Sunny.' }],
    stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 20, output_tokens: 3 },
  }))

  // Turn 1 on Gemini: its function call's signature comes back in a thinking block.
  gemini.next({ parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] })
  const user: Anthropic.MessageParam = { role: 'user', content: 'Weather in Paris?' }
  const first = await client.messages.create({ model: 'google/pro3', max_tokens: 200, tools: [TOOL], messages: [user] })
  t.same(first.content.map(b => b.type), ['thinking', 'tool_use'])
  const sig = (first.content[0] as Anthropic.ThinkingBlock).signature
  t.match(sig, /^gw-gemini:/, 'the Gemini signature rides a thinking block')
  const call = first.content[1] as Anthropic.ToolUseBlock
  const history: Anthropic.MessageParam[] = [user, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny, 21C' }] }]

  // Turn 2 on each Claude upstream, thinking on (as Claude Code sends it).
  const thinking = { type: 'enabled' as const, budget_tokens: 1024 }
  const sent: Array<[string, () => Recorded | undefined]> = [
    ['anthropic/sonnet', () => anthropicUp.requests.at(-1)],
    ['vertex/sonnet', () => vertex.requests.filter(r => r.operation === 'rawPredict').at(-1)],
    ['aws/sonnet', () => bedrock.requests.at(-1)],
  ]
  vertex.next({ content: [{ text: 'Sunny.' }], usage: { input: 20, output: 3 } })
  bedrock.next({ content: [{ text: 'Sunny.' }] })
  for (const [model, last] of sent) {
    const answer = await client.messages.create({ model, max_tokens: 2048, thinking, tools: [TOOL], messages: history })
    t.equal(answer.content.find(b => b.type === 'text')?.type, 'text', `${model}: answered`)
    const body = JSON.stringify(last()?.body)
    t.notMatch(body, /gw-gemini/, `${model}: no carried signature reached the upstream`)
    t.match(body, /toolu_|tooluse|get_weather/, `${model}: the tool call is still in the history`)
    t.notMatch(body, /"budget_tokens"/, `${model}: thinking off, since the tool loop's last turn has no thinking of Claude's`)
  }

  // Claude's own signed thinking still goes back to Anthropic's API as the client sent it.
  const own = {
    model: 'anthropic/sonnet', max_tokens: 2048, thinking, tools: [TOOL],
    messages: [user, { role: 'assistant', content: [{ type: 'thinking', thinking: 'Look it up.', signature: CLAUDE_SIG }, { type: 'tool_use', id: 'toolu_9', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'sunny' }] }],
  }
  const res = await fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01' }, body: JSON.stringify(own) })
  t.equal(res.status, 200)
  const got = anthropicUp.requests.at(-1)!.body as typeof own
  t.same(got.messages, own.messages, 'Claude\'s signed thinking given back unchanged')
  t.same(got.thinking, thinking, 'thinking stays on')
})
