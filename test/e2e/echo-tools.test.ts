import t from 'tap'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { buildTestApp, listen, TEST_KEY } from '../helpers/build-test-app.ts'

// Agents prepend context to the user's words and declare tools whose arguments they parse
// against the schema; the echo models, on both their faces and through every route, call the
// tool the "/tool" trigger names with arguments that schema accepts.

const execSchema = {
  type: 'object' as const,
  properties: { cmd: { type: 'string' }, workdir: { type: 'string' }, yield_time_ms: { type: 'number' }, login: { type: 'boolean' } },
  required: ['cmd', 'login'], additionalProperties: false,
}
const bashSchema = {
  type: 'object' as const,
  properties: { command: { type: 'string' }, timeout: { type: 'number', maximum: 600000 }, run_in_background: { type: 'boolean' } },
  required: ['command'],
}
const readSchema = { type: 'object' as const, properties: { file_path: { type: 'string' }, limit: { type: 'integer', minimum: 1 } }, required: ['file_path', 'limit'] }
const reminder = '<system-reminder>\nThe user works in /tmp. /tool is only a word here.\n</system-reminder>'

t.test('echo tool calls follow the tool schema and find /tool after prepended context', async t => {
  const app = await buildTestApp()
  const base = await listen(app)
  t.teardown(() => app.close())
  const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const anthropic = new Anthropic({ baseURL: base, apiKey: TEST_KEY, maxRetries: 0 })

  for (const model of ['echo/echo-1', 'msgvendor/echo-1']) {
    t.test(`chat completions on ${model} (streamed and not)`, async t => {
      const tools = [{ type: 'function' as const, function: { name: 'exec_command', parameters: execSchema } }]
      const messages = [
        { role: 'system' as const, content: 'You are a coding agent.' },
        { role: 'user' as const, content: '# AGENTS.md instructions for /tmp\nKeep it short.' },
        { role: 'user' as const, content: '<environment_context>\n  <cwd>/tmp</cwd>\n</environment_context>\n\n/tool echo codex-42' },
      ]
      const plain = await openai.chat.completions.create({ model, messages, tools })
      const streamed = await openai.chat.completions.stream({ model, messages, tools }).finalChatCompletion()
      for (const c of [plain, streamed]) {
        t.equal(c.choices[0].finish_reason, 'tool_calls')
        const call = c.choices[0].message.tool_calls![0]
        if (call.type !== 'function') throw new Error('not a function call')
        t.equal(call.function.name, 'exec_command')
        t.same(JSON.parse(call.function.arguments), { cmd: 'echo codex-42', login: false })
      }
    })

    t.test(`messages on ${model}: the trigger names the tool, after a system reminder block`, async t => {
      const tools = [{ name: 'Read', input_schema: readSchema }, { name: 'Bash', input_schema: bashSchema }]
      const messages = [{ role: 'user' as const, content: [{ type: 'text' as const, text: reminder }, { type: 'text' as const, text: '/tool Bash ls -la' }] }]
      const plain = await anthropic.messages.create({ model, max_tokens: 256, messages, tools })
      const streamed = await anthropic.messages.stream({ model, max_tokens: 256, messages, tools }).finalMessage()
      for (const m of [plain, streamed]) {
        t.equal(m.stop_reason, 'tool_use')
        const use = m.content.find(b => b.type === 'tool_use')
        t.match(use, { name: 'Bash', input: { command: 'ls -la' } })
        t.same(use?.type === 'tool_use' ? use.input : undefined, { command: 'ls -la' })
      }
      const first = await anthropic.messages.create({ model, max_tokens: 256, messages: [{ role: 'user', content: `${reminder}\n/tool notes.txt` }], tools })
      const use = first.content.find(b => b.type === 'tool_use')
      t.equal(use?.type === 'tool_use' ? use.name : undefined, 'Read', 'no tool name after /tool: the first tool')
      t.same(use?.type === 'tool_use' ? use.input : undefined, { file_path: 'notes.txt', limit: 1 })
    })

    t.test(`responses on ${model}: a function tool gets its required fields`, async t => {
      const r = await openai.responses.create({
        model, store: false,
        input: [
          { role: 'user', content: [{ type: 'input_text', text: '<environment_context><cwd>/tmp</cwd></environment_context>' }] },
          { role: 'user', content: [{ type: 'input_text', text: 'please run\n/tool echo codex-42' }] },
        ],
        tools: [{ type: 'function', name: 'exec_command', parameters: execSchema, strict: false }],
      })
      const call = r.output.find(o => o.type === 'function_call')
      t.match(call, { type: 'function_call', name: 'exec_command' })
      t.same(call?.type === 'function_call' ? JSON.parse(call.arguments) : undefined, { cmd: 'echo codex-42', login: false })
    })
  }
})
