// A coding-agent-sized request, generated deterministically (same bytes on every run and machine):
// what Claude Code and Codex send on every turn of a session. About 145 KB: a 15 KB system prompt,
// 24 tools with rich JSON schemas (nested objects, enums, arrays, descriptions), and 15 turns of
// tool calls answered with file contents (code with quotes, backslashes, newlines, a few non-ASCII
// characters). One shape per protocol: chat completions (`agentChatBody`) and messages
// (`agentMessagesBody`, with cache_control markers as Claude Code sets them).
//
// `node bench/agent-body.mjs [chat|messages]` prints the body (JSON) and its size on stderr.

/** A small deterministic PRNG (mulberry32), so every run builds the same bytes. */
function rng (seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WORDS = ('the a file tool call result change test build run read write edit search repository branch commit ' +
  'function module import export type interface return value error handle request response stream token model ' +
  'always never before after when unless only every each must should may prefer avoid keep use make check verify ' +
  'user project code line path directory command output input context task plan step review diff patch lint').split(' ')

function sentence (r, n) {
  const w = []
  for (let i = 0; i < n; i++) w.push(WORDS[Math.floor(r() * WORDS.length)])
  w[0] = w[0][0].toUpperCase() + w[0].slice(1)
  return w.join(' ') + '.'
}

/** The system prompt: ~15 KB of sections, rules and examples in markdown. */
function systemPrompt (r) {
  const out = ['You are an interactive coding agent that helps users with software engineering tasks. Use the instructions below and the tools available to you to assist the user.', '']
  let section = 0
  while (out.join('\n').length < 15_000) {
    section++
    out.push(`# Section ${section}: ${sentence(r, 3).slice(0, -1)}`, '')
    for (let i = 0; i < 4; i++) out.push(`- ${sentence(r, 8 + Math.floor(r() * 14))}`)
    out.push('', `<example>\nuser: ${sentence(r, 6)}\nassistant: ${sentence(r, 10)} — “quoted” and \`code\` too.\n</example>`, '')
  }
  return out.join('\n').slice(0, 15_000)
}

const TOOL_NAMES = ['Bash', 'Read', 'Write', 'Edit', 'MultiEdit', 'Glob', 'Grep', 'LS', 'NotebookRead', 'NotebookEdit',
  'WebFetch', 'WebSearch', 'TodoRead', 'TodoWrite', 'Task', 'ExitPlanMode', 'ApplyPatch', 'RunTests', 'GitDiff',
  'GitLog', 'GitCommit', 'OpenPullRequest', 'ListIssues', 'AskUser']

/** One tool's JSON schema: 2–5 properties, some nested, with enums, arrays and descriptions. */
function toolSchema (r) {
  const properties = {}
  const required = []
  const n = 2 + Math.floor(r() * 4)
  for (let i = 0; i < n; i++) {
    const name = `${WORDS[Math.floor(r() * WORDS.length)]}_${WORDS[Math.floor(r() * WORDS.length)]}`
    const kind = Math.floor(r() * 4)
    const description = sentence(r, 10 + Math.floor(r() * 14))
    properties[name] = kind === 0
      ? { type: 'string', description }
      : kind === 1
        ? { type: 'integer', minimum: 0, maximum: 1_000_000, description }
        : kind === 2
          ? { type: 'array', items: { type: 'object', properties: { old_string: { type: 'string', description: sentence(r, 8) }, new_string: { type: 'string', description: sentence(r, 8) }, replace_all: { type: 'boolean', default: false } }, required: ['old_string', 'new_string'], additionalProperties: false }, description }
          : { type: 'string', enum: ['auto', 'always', 'never', 'on-failure', 'on-request'], description }
    if (r() < 0.6) required.push(name)
  }
  return { type: 'object', properties, required, additionalProperties: false, $schema: 'http://json-schema.org/draft-07/schema#' }
}

function tools (r) {
  return TOOL_NAMES.map(name => ({ name, description: `${sentence(r, 16)} ${sentence(r, 12)} Usage notes:\n- ${sentence(r, 10)}`, schema: toolSchema(r) }))
}

/** A source file's content: ~5.2 KB of TypeScript-like lines (quotes, backslashes, tabs, a few non-ASCII characters). */
function fileContent (r, turn) {
  const lines = [`// src/module${turn}.ts — generated for the benchmark`, "import { request } from 'undici'", '']
  let i = 0
  while (lines.join('\n').length < 5_050) {
    i++
    const w = () => WORDS[Math.floor(r() * WORDS.length)]
    switch (i % 6) {
      case 0: lines.push(`export function ${w()}${i} (input: string, opts = { retries: ${i % 5} }): string {`); break
      case 1: lines.push(`  const ${w()} = input.replace(/\\s+/g, ' ').split("\\n") // ${sentence(r, 6)}`); break
      case 2: lines.push(`  if (!${w()}) throw new Error(\`${w()} failed: "\${input}" — ${w()}\`)`); break
      case 3: lines.push(`\treturn JSON.stringify({ ${w()}: '${w()}', path: 'C:\\\\tmp\\\\${w()}', ok: true })`); break
      case 4: lines.push('}'); break
      default: lines.push(`/** ${sentence(r, 12)} */`)
    }
  }
  return lines.map((l, n) => `${String(n + 1).padStart(6)}\t${l}`).join('\n')
}

/** The conversation, protocol-neutral: the first user message and 15 turns of one tool call and its result. */
function conversation () {
  const r = rng(0x5eed)
  const system = systemPrompt(r)
  const toolList = tools(r)
  const user = `${sentence(r, 30)} Please fix the failing tests in src/ and explain what changed.`
  const turns = []
  for (let t = 0; t < 15; t++) {
    const tool = toolList[t % 3 === 0 ? 1 : t % 3 === 1 ? 6 : 0]
    turns.push({
      id: `toolu_${String(t).padStart(2, '0')}${Math.floor(r() * 1e12).toString(36)}`,
      text: t % 2 === 0 ? sentence(r, 12) : undefined,
      name: tool.name,
      input: tool.name === 'Read' ? { file_path: `/repo/src/module${t}.ts`, offset: 0, limit: 2000 } : tool.name === 'Grep' ? { pattern: 'function\\s+\\w+', path: '/repo/src', output_mode: 'content' } : { command: `npm test -- src/module${t}.test.ts`, timeout: 120000 },
      result: fileContent(r, t),
    })
  }
  return { system, tools: toolList, user, turns }
}

/** POST /v1/chat/completions, as Codex and OpenAI-compatible agents send it. */
export function agentChatBody (model = 'bench/chat', extra = {}) {
  const c = conversation()
  const messages = [{ role: 'system', content: c.system }, { role: 'user', content: c.user }]
  for (const t of c.turns) {
    messages.push({ role: 'assistant', content: t.text ?? null, tool_calls: [{ id: t.id, type: 'function', function: { name: t.name, arguments: JSON.stringify(t.input) } }] })
    messages.push({ role: 'tool', tool_call_id: t.id, content: t.result })
  }
  return {
    model,
    messages,
    tools: c.tools.map(t => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.schema } })),
    tool_choice: 'auto',
    parallel_tool_calls: true,
    max_tokens: 8192,
    temperature: 0,
    ...extra,
  }
}

/** POST /v1/messages, as Claude Code sends it (cache_control on the system prompt and the last result). */
export function agentMessagesBody (model = 'bench/messages', extra = {}) {
  const c = conversation()
  const messages = [{ role: 'user', content: [{ type: 'text', text: c.user }] }]
  c.turns.forEach((t, i) => {
    messages.push({ role: 'assistant', content: [...(t.text ? [{ type: 'text', text: t.text }] : []), { type: 'tool_use', id: t.id, name: t.name, input: t.input }] })
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: t.id, content: t.result, ...(i === c.turns.length - 1 ? { cache_control: { type: 'ephemeral' } } : {}) }] })
  })
  return {
    model,
    max_tokens: 8192,
    system: [{ type: 'text', text: c.system, cache_control: { type: 'ephemeral' } }],
    tools: c.tools.map(t => ({ name: t.name, description: t.description, input_schema: t.schema })),
    messages,
    metadata: { user_id: 'bench-agent' },
    ...extra,
  }
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const body = process.argv[2] === 'messages' ? agentMessagesBody() : agentChatBody()
  const text = JSON.stringify(body)
  process.stderr.write(`${Buffer.byteLength(text)} bytes\n`)
  process.stdout.write(text)
}
