/**
 * Real clients people point at a gateway, unchanged, against a listening gateway: Claude Code (headless),
 * the Vercel AI SDK (OpenAI and Anthropic providers) and LangChain JS (ChatOpenAI, ChatAnthropic),
 * each on same-protocol and cross-protocol models, streaming and tools included.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { generateText, streamText, tool, stepCountIs, jsonSchema } from 'ai'
import { createOpenAI } from '@ai-sdk/openai'
import { createAnthropic } from '@ai-sdk/anthropic'
import { ChatOpenAI } from '@langchain/openai'
import { ChatAnthropic } from '@langchain/anthropic'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { outcomeSpy } from '../helpers/outcome-spy.ts'

// Claude Code 2.1 ships a native executable (its postinstall links the platform's binary here).
const CLAUDE = resolve('node_modules/@anthropic-ai/claude-code/bin/claude.exe')

function runClaude (args: string[], env: Record<string, string>): Promise<{ code: number | null, out: string, err: string }> {
  return new Promise(resolve => {
    const home = mkdtempSync(join(tmpdir(), 'gw-claude-'))
    const child = spawn(CLAUDE, args, {
      cwd: home,
      env: { PATH: process.env.PATH ?? '', HOME: home, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    child.stdout.on('data', d => { out += d })
    child.stderr.on('data', d => { err += d })
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.on('close', code => { clearTimeout(timer); resolve({ code, out, err }) })
  })
}

t.test('real clients against a listening gateway', async t => {
  const spy = outcomeSpy()
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY, { plugin: 'outcome-spy' }],
    plugins: [spy.plugin],
    doc: { aliases: { 'claude-sonnet-4-5': 'msgvendor/echo-1', 'claude-3-5-haiku-20241022': 'echo/echo-1' } },
  })
  const base = await listen(app)
  t.teardown(() => app.close())

  t.test('Claude Code, headless, on a chat-upstream model (translated) and a messages-upstream one', async t => {
    for (const model of ['echo/echo-1', 'msgvendor/echo-1', 'claude-sonnet-4-5']) {
      const before = spy.seen.length
      const r = await runClaude(['-p', 'say hello', '--model', model, '--output-format', 'json'], { ANTHROPIC_BASE_URL: base, ANTHROPIC_AUTH_TOKEN: TEST_KEY })
      t.equal(r.code, 0, `exit 0 (${model}) ${r.err.slice(0, 300)}`)
      let result: any
      try { result = JSON.parse(r.out) } catch { result = undefined }
      t.ok(result, `JSON result (${model})`)
      t.equal(result?.is_error, false)
      t.equal(result?.result, 'Echo: say hello', `the answer came through (${model})`)
      t.ok(result?.usage?.input_tokens > 0, 'usage reached Claude Code')
      const calls = spy.seen.slice(before).filter(s => s.route === 'messages')
      t.ok(calls.length >= 1, 'it called /v1/messages')
      t.ok(calls.every(s => s.outcome.status === 200), 'no failed call (no silent non-streaming retry)')
    }
  })

  t.test('Claude Code with ANTHROPIC_API_KEY (x-api-key)', async t => {
    const r = await runClaude(['-p', 'ping', '--model', 'msgvendor/echo-1', '--output-format', 'json'], { ANTHROPIC_BASE_URL: base, ANTHROPIC_API_KEY: TEST_KEY })
    t.equal(r.code, 0, r.err.slice(0, 300))
    t.match(r.out, /Echo: ping/)
  })

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
          text += typeof chunk.content === 'string' ? chunk.content : chunk.content.map((c: any) => c.text ?? '').join('')
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
