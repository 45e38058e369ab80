/**
 * Real clients people point at a gateway, unchanged, against a listening gateway: Claude Code 2.1
 * (headless, its native executable), the Vercel AI SDK (OpenAI and Anthropic providers) and
 * LangChain JS (ChatOpenAI, ChatAnthropic), each on same-protocol and cross-protocol models,
 * streaming and tools included.
 */
import t from 'tap'
import { generateText, streamText, tool, stepCountIs, jsonSchema } from 'ai'
import { createOpenAI } from '@ai-sdk/openai'
import { createAnthropic } from '@ai-sdk/anthropic'
import { ChatOpenAI } from '@langchain/openai'
import { ChatAnthropic } from '@langchain/anthropic'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { outcomeSpy } from '../../testing.ts'
import { anthropicLike, startFakeUpstream, KNOWN_BETAS, MID_CONVERSATION_SYSTEM_BETA } from '../helpers/fake-upstream.ts'
import { embeddedDefault } from '../../core/config/default-config.ts'
import { runClaude, claudeResult as resultOf } from '../helpers/agents.ts'

// Claude Code 2.1 prepends system reminders to the prompt in the same user turn, and the echo
// model echoes the whole turn: the prompt is its last words.
const echoes = (prompt: string) => new RegExp(`^Echo: [\\s\\S]*${prompt}$`)

t.test('Claude Code 2.1, headless: plain, streamed and tool turns on messages and chat upstreams', async t => {
  // An anthropic-compatible provider in front of a fake that refuses what Anthropic's API refuses.
  const up = await startFakeUpstream(anthropicLike())
  const spy = outcomeSpy()
  const base = embeddedDefault('sk-gw-unused') as { providers: unknown[], models: unknown[] }
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY, { plugin: 'outcome-spy' }],
    plugins: [spy.plugin],
    doc: {
      providers: [...base.providers, { name: 'anthropic', adapter: 'anthropic-compatible', config: { baseUrl: up.origin, apiKey: 'sk-ant-upstream' } }],
      models: [...base.models, { id: 'anthropic/claude-fake', input_modalities: ['text', 'image'], deployments: [{ provider: 'anthropic', model: 'claude-up' }] }],
    },
  })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await up.close() })
  const keys: Array<Record<string, string>> = [{ ANTHROPIC_AUTH_TOKEN: TEST_KEY }, { ANTHROPIC_API_KEY: TEST_KEY }]

  // anthropic/claude-fake and msgvendor/echo-1: messages upstreams; echo/echo-1: a chat upstream (translated).
  for (const model of ['anthropic/claude-fake', 'msgvendor/echo-1', 'echo/echo-1']) {
    t.test(model, async t => {
      const before = spy.seen.length
      for (const key of keys) {
        const name = Object.keys(key)[0]
        const r = await runClaude(['-p', 'say hello', '--model', model, '--output-format', 'json'], { ANTHROPIC_BASE_URL: url, ...key })
        t.equal(r.code, 0, `plain, ${name}: exit 0 ${r.err.slice(0, 300)}`)
        const result = resultOf(r.out)
        t.equal(result?.is_error, false, `plain, ${name}: ${r.out.slice(0, 300)}`)
        t.match(result?.result, echoes('say hello'), `plain, ${name}: the answer came through`)
        t.ok(result?.usage?.input_tokens > 0, 'usage reached Claude Code')
      }

      const s = await runClaude(['-p', 'stream me', '--model', model, '--output-format', 'stream-json', '--verbose', '--include-partial-messages'], { ANTHROPIC_BASE_URL: url, ...keys[0] })
      t.equal(s.code, 0, `streamed: exit 0 ${s.err.slice(0, 300)}`)
      const lines = s.out.trim().split('\n').map(l => { try { return JSON.parse(l) } catch { return {} } })
      const deltas = lines.filter(l => l.type === 'stream_event' && l.event?.type === 'content_block_delta' && l.event.delta?.type === 'text_delta').map(l => l.event.delta.text as string)
      t.ok(deltas.length > 1, 'the answer arrived in pieces')
      t.match(deltas.join(''), echoes('stream me'), 'streamed text')
      t.match(lines.at(-1), { type: 'result', is_error: false }, 'streamed: the turn completed')

      // The echo model calls Bash with the rest of the line; Claude Code runs it and sends the output back.
      const tl = await runClaude(['-p', 'please /tool Bash echo cc-42', '--model', model, '--allowedTools', 'Bash', '--output-format', 'json'], { ANTHROPIC_BASE_URL: url, ...keys[1] })
      t.equal(tl.code, 0, `tool: exit 0 ${tl.err.slice(0, 300)}`)
      const tr = resultOf(tl.out)
      t.equal(tr?.num_turns, 2, 'a tool turn, then the answer')
      t.match(tr?.result, /^Echo: tool said cc-42/, 'the command ran and its output went back upstream')

      const calls = spy.seen.slice(before).filter(c => c.route === 'messages')
      t.ok(calls.length >= 5, 'it called /v1/messages')
      t.ok(calls.every(c => c.outcome.status === 200), 'no failed call (no silent non-streaming retry)')
    })
  }

  t.test('on the 2026 line, and on an upstream that takes system turns in neither form (folded)', async t => {
    // This upstream knows only 2023-06-01 and not the mid-conversation-system beta.
    const old = await startFakeUpstream(anthropicLike({ versions: ['2023-06-01'], betas: KNOWN_BETAS.filter(b => b !== MID_CONVERSATION_SYSTEM_BETA) }))
    const v2026 = await startFakeUpstream(anthropicLike({ versions: ['2026-10-21'] }))
    const base = embeddedDefault('sk-gw-unused') as { providers: unknown[], models: unknown[] }
    const app2 = await buildTestApp({
      doc: {
        providers: [...base.providers,
          { name: 'old', adapter: 'anthropic-compatible', config: { baseUrl: old.origin, apiKey: 'k', systemMessages: 'fold' } },
          { name: 'new', adapter: 'anthropic-compatible', config: { baseUrl: v2026.origin, apiKey: 'k', version: '2026-10-21' } }],
        models: [...base.models,
          { id: 'anthropic/folded', deployments: [{ provider: 'old', model: 'claude-up' }] },
          { id: 'anthropic/v2026', deployments: [{ provider: 'new', model: 'claude-up' }] }],
      },
    })
    const url2 = await listen(app2)
    t.teardown(async () => { await app2.close(); await old.close(); await v2026.close() })
    for (const model of ['anthropic/folded', 'anthropic/v2026']) {
      const r = await runClaude(['-p', 'say hello', '--model', model, '--output-format', 'json'], { ANTHROPIC_BASE_URL: url2, ANTHROPIC_AUTH_TOKEN: TEST_KEY })
      t.match(resultOf(r.out)?.result, echoes('say hello'), `${model}: ${r.out.slice(0, 300)}`)
      const tl = await runClaude(['-p', 'please /tool Bash echo cc-43', '--model', model, '--allowedTools', 'Bash', '--output-format', 'json'], { ANTHROPIC_BASE_URL: url2, ANTHROPIC_API_KEY: TEST_KEY })
      t.match(resultOf(tl.out)?.result, /^Echo: tool said cc-43/, `${model}: tool turn`)
    }
    t.ok(old.requests.length >= 3 && old.requests.every(r => r.body.messages.every((m: { role: string }) => m.role !== 'system')), 'folded: no system turn in the list')
    t.ok(old.requests.every(r => JSON.stringify(r.body.system).includes('# Environment')), 'folded: Claude Code\'s environment block closes the system prompt')
    t.ok(v2026.requests.length >= 3 && v2026.requests.every(r => r.headers['anthropic-version'] === '2026-10-21'))
    t.ok(v2026.requests.some(r => r.body.messages.some((m: { role: string }) => m.role === 'system')), '2026 line: the system turn as sent')
  })

  t.test('what reached the checking upstream', async t => {
    t.ok(up.requests.length >= 5)
    t.ok(up.requests.some(r => r.body.messages.some((m: { role: string }) => m.role === 'system')), 'Claude Code sent a system turn inside messages')
    t.ok(up.requests.every(r => String(r.headers['anthropic-beta']).split(',').includes('mid-conversation-system-2026-04-07')), 'under the beta that lets 2023-06-01 take it')
    t.ok(up.requests.every(r => String(r.headers['anthropic-beta']).split(',').includes('advanced-tool-use-2025-11-20')), 'its deferred tools kept their beta')
    t.ok(up.requests.some(r => r.body.messages.some((m: { content: unknown }) => JSON.stringify(m.content).includes('cc-42'))), 'the tool result went upstream')
  })
})

t.test('Claude Code with no --model, on the embedded default', async t => {
  const KEY = 'sk-gw-demo-claude-code'
  const doc = embeddedDefault(KEY)
  const app = await buildTestApp({ doc, pipeline: doc.pipeline as unknown[] })
  const url = await listen(app)
  t.teardown(() => app.close())
  const r = await runClaude(['-p', 'hi', '--output-format', 'json'], { ANTHROPIC_BASE_URL: url, ANTHROPIC_AUTH_TOKEN: KEY })
  t.equal(r.code, 0, r.err.slice(0, 300))
  const result = resultOf(r.out)
  t.equal(result?.is_error, false, r.out.slice(0, 300))
  t.match(result?.result, echoes('hi'), 'its default model name is an alias of an echo model')
  t.match(Object.keys(result?.modelUsage ?? {}), [/^claude-/], 'under its own default model name')
})

t.test('real clients against a listening gateway', async t => {
  const app = await buildTestApp()
  const base = await listen(app)
  t.teardown(() => app.close())

  const aiOpenAI = createOpenAI({ baseURL: `${base}/v1`, apiKey: TEST_KEY })
  const aiAnthropic = createAnthropic({ baseURL: `${base}/v1`, apiKey: TEST_KEY })

  t.test('Vercel AI SDK: generateText and streamText on both providers and both upstream kinds', async t => {
    for (const [name, model] of [
      ['openai → chat upstream', aiOpenAI.chat('echo/echo-1')],
      ['openai → messages upstream', aiOpenAI.chat('msgvendor/echo-1')],
      ['anthropic → messages upstream', aiAnthropic('msgvendor/echo-1')],
      ['anthropic → chat upstream', aiAnthropic('echo/echo-1')],
      // The provider's default model speaks the Responses API.
      ['openai responses → chat upstream', aiOpenAI('echo/echo-1')],
      ['openai responses → messages upstream', aiOpenAI.responses('msgvendor/echo-1')],
    ] as const) {
      const g = await generateText({ model, prompt: 'hello there', maxRetries: 0 })
      t.equal(g.text, 'Echo: hello there', `${name}: generateText`)
      t.ok((g.usage.inputTokens ?? 0) > 0, `${name}: usage`)
      const s = streamText({ model, prompt: 'stream me', maxRetries: 0, onError: ({ error }) => { t.fail(`${name}: ${String(error)}`) } })
      let text = ''
      for await (const d of s.textStream) text += d
      t.equal(text, 'Echo: stream me', `${name}: streamText`)
      t.equal(await s.finishReason, 'stop')
      t.ok(((await s.usage).outputTokens ?? 0) > 0, `${name}: stream usage`)
    }
  })

  t.test('Vercel AI SDK: a tool round trip on each provider and both upstream kinds', async t => {
    for (const model of [
      aiAnthropic('echo/echo-1'), aiAnthropic('msgvendor/echo-1'),
      aiOpenAI.chat('echo/echo-1'), aiOpenAI.chat('msgvendor/echo-1'),
      aiOpenAI.responses('echo/echo-1'), aiOpenAI.responses('msgvendor/echo-1'),
    ]) {
      let called = ''
      const r = await generateText({
        model, maxRetries: 0, prompt: '/tool Oslo', stopWhen: stepCountIs(2),
        tools: {
          lookup: tool({
            description: 'look something up',
            inputSchema: jsonSchema<{ text: string }>({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }),
            execute: async ({ text }) => { called = text; return 'fine weather' },
          }),
        },
      })
      t.equal(called, 'Oslo', `${model.provider} ${model.modelId}: the tool was called with the arguments`)
      t.match(r.text, /Echo: tool said/, `${model.provider} ${model.modelId}: the tool result went back upstream`)
    }
  })

  t.test('LangChain: ChatOpenAI (chat and Responses) and ChatAnthropic, invoke and stream, both upstream kinds', async t => {
    for (const model of ['echo/echo-1', 'msgvendor/echo-1']) {
      const lcOpenAI = new ChatOpenAI({ model, apiKey: TEST_KEY, configuration: { baseURL: `${base}/v1` }, maxRetries: 0 })
      const lcResponses = new ChatOpenAI({ model, apiKey: TEST_KEY, configuration: { baseURL: `${base}/v1` }, maxRetries: 0, useResponsesApi: true })
      const lcAnthropic = new ChatAnthropic({ model, apiKey: TEST_KEY, anthropicApiUrl: base, maxRetries: 0 })
      for (const [name, chat] of [['ChatOpenAI', lcOpenAI], ['ChatOpenAI responses', lcResponses], ['ChatAnthropic', lcAnthropic]] as const) {
        const msg = await chat.invoke('hi langchain')
        t.equal(msg.text, 'Echo: hi langchain', `${name} ${model}: invoke`)
        t.ok((msg.usage_metadata?.input_tokens ?? 0) > 0, `${name} ${model}: input tokens`)
        let text = ''
        let input = 0
        for await (const chunk of await chat.stream('streamed langchain')) {
          text += typeof chunk.content === 'string' ? chunk.content : chunk.content.map(c => 'text' in c ? c.text : '').join('')
          input += chunk.usage_metadata?.input_tokens ?? 0
        }
        t.equal(text, 'Echo: streamed langchain', `${name} ${model}: stream`)
        t.ok(input > 0, `${name} ${model}: streamed input tokens`)
      }
    }
  })

  t.test('LangChain: tool calls through bindTools', async t => {
    const tools = [{ type: 'function' as const, function: { name: 'lookup', description: 'look up', parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } } }]
    for (const model of ['echo/echo-1', 'msgvendor/echo-1']) {
      const chats = [
        ['ChatOpenAI', new ChatOpenAI({ model, apiKey: TEST_KEY, configuration: { baseURL: `${base}/v1` }, maxRetries: 0 })],
        ['ChatOpenAI responses', new ChatOpenAI({ model, apiKey: TEST_KEY, configuration: { baseURL: `${base}/v1` }, maxRetries: 0, useResponsesApi: true })],
        ['ChatAnthropic', new ChatAnthropic({ model, apiKey: TEST_KEY, anthropicApiUrl: base, maxRetries: 0 })],
      ] as const
      for (const [name, chat] of chats) {
        const msg = await chat.bindTools(tools).invoke('/tool Bergen')
        t.equal(msg.tool_calls?.[0]?.name, 'lookup', `${name} ${model}`)
        t.same(msg.tool_calls?.[0]?.args, { text: 'Bergen' })
      }
    }
  })
})
