/**
 * @module Claude Code (its current release, headless) runs a tool loop with thinking on through a
 * listening gateway, on an anthropic-compatible provider in front of a messages upstream that
 * checks what Anthropic's API checks: the assistant turn of a tool loop must start with the signed
 * thinking block the upstream issued, unchanged, and a forged signature is refused.
 */
import t from 'tap'
import { createHmac } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import { TEST_KEY } from '../helpers/build-test-app.ts'
import { checkMessagesRequest, json, sse, startFakeUpstream, type Recorded } from '../helpers/fake-upstream.ts'
import { runClaude, claudeResult, claudeCodeGateway } from '../helpers/agents.ts'

const MODEL = 'anthropic/thinker'
const SECRET = 'upstream-signing-key'
const sign = (text: string): string => 'sig_' + createHmac('sha256', SECRET).update(text).digest('base64')
const THOUGHT = 'The user wants me to run a command; call Bash with echo.'
const FIRST_USAGE = { input_tokens: 31, output_tokens: 17 }
const LAST_USAGE = { input_tokens: 43, output_tokens: 9 }

function bad (res: ServerResponse, message: string): void {
  json(res, 400, { type: 'error', error: { type: 'invalid_request_error', message } }, { 'request-id': 'req_fake' })
}

/** Index of the last assistant turn. */
const lastAssistant = (turns: any[]): number => turns.map(m => m.role).lastIndexOf('assistant')

const ev = (type: string, data: Record<string, unknown>): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

/** The thinking block this upstream issues: with `display: "omitted"` (Claude Code asks so) its text is empty, its signature signs the thought. */
const issuedBlock = (display: unknown) => ({ type: 'thinking', thinking: display === 'omitted' ? '' : THOUGHT, signature: sign(THOUGHT) })

/**
 * A thinking messages upstream: Anthropic's request checks, then thinking must be on; a turn that
 * answers a tool gets text (quoting the tool's output), any other turn a signed thinking block and a
 * Bash call. Every thinking block sent back must be the one issued, and the assistant turn of the
 * loop must start with it, or the answer is Anthropic's 400.
 */
function thinker (issued: string[]) {
  return (req: Recorded, res: ServerResponse): void => {
    const refused = checkMessagesRequest(req, { betas: '*' })
    if (refused) return json(res, refused.status, refused.body)
    const body = req.body
    if (req.path.split('?')[0].endsWith('/count_tokens')) return json(res, 200, { input_tokens: 10 })
    if (body.thinking?.type !== 'enabled' && body.thinking?.type !== 'adaptive') return bad(res, 'thinking: this test model is only called with thinking on')
    const turns: any[] = body.messages
    for (const [i, m] of turns.entries()) {
      if (m.role !== 'assistant' || !Array.isArray(m.content)) continue
      for (const [j, b] of m.content.entries()) {
        if (b.type === 'thinking' && b.signature !== sign(THOUGHT)) return bad(res, `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`)
      }
    }
    const last = turns.at(-1)
    const result = Array.isArray(last.content) ? last.content.find((b: { type: string }) => b.type === 'tool_result') : undefined
    if (result !== undefined) {
      const i = lastAssistant(turns)
      const head = turns[i]?.content?.[0]
      if (head?.type !== 'thinking' && head?.type !== 'redacted_thinking') return bad(res, `messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${head?.type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`.`)
      if (!issued.includes(JSON.stringify(head))) return bad(res, `messages.${i}.content.0: the thinking block was modified`)
    }
    const output = result === undefined ? '' : (typeof result.content === 'string' ? result.content : result.content.map((c: { text?: string }) => c.text ?? '').join('')).trim()
    const block = issuedBlock(body.thinking.display)
    const content = result !== undefined
      ? [{ type: 'text', text: `Thought it through: ${output}` }]
      : [block, { type: 'tool_use', id: 'toolu_think1', name: 'Bash', input: { command: 'echo cc-think-7', description: 'Print a marker' } }]
    if (result === undefined) issued.push(JSON.stringify(block))
    const usage = result !== undefined ? LAST_USAGE : FIRST_USAGE
    const stop = result !== undefined ? 'end_turn' : 'tool_use'
    if (body.stream !== true) return json(res, 200, { id: 'msg_think', type: 'message', role: 'assistant', model: body.model, content, stop_reason: stop, stop_sequence: null, usage })
    const events = [ev('message_start', { message: { id: 'msg_think', type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.input_tokens, output_tokens: 1 } } })]
    content.forEach((b: any, index) => {
      if (b.type === 'thinking') {
        events.push(ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }))
        if (b.thinking !== '') events.push(ev('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: b.thinking } }))
        events.push(ev('content_block_delta', { index, delta: { type: 'signature_delta', signature: b.signature } }))
      } else if (b.type === 'tool_use') {
        events.push(ev('content_block_start', { index, content_block: { ...b, input: {} } }))
        events.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } }))
      } else {
        events.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }))
        events.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: b.text } }))
      }
      events.push(ev('content_block_stop', { index }))
    })
    events.push(ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage }), ev('message_stop', {}))
    void sse(res, events)
  }
}

t.test('Claude Code, thinking on: a Bash tool loop hands the signed thinking block back through the gateway', async t => {
  const issued: string[] = []
  const up = await startFakeUpstream(thinker(issued))
  const { url, spy } = await claudeCodeGateway(t, up.origin, MODEL, () => up.close())

  t.test('the fake refuses what Anthropic refuses', async t => {
    const user = { role: 'user', content: 'run it' }
    const toolTurn = (head: unknown[]) => [user, { role: 'assistant', content: [...head, { type: 'tool_use', id: 'toolu_x', name: 'Bash', input: { command: 'echo x' } }] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'x' }] }]
    const call = async (messages: unknown[]) => {
      const r = await fetch(`${up.origin}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }, body: JSON.stringify({ model: 'm', max_tokens: 100, thinking: { type: 'enabled', budget_tokens: 50 }, messages }) })
      return { status: r.status, body: await r.json() as any }
    }
    const missing = await call(toolTurn([]))
    t.equal(missing.status, 400)
    t.match(missing.body.error.message, /^messages\.1\.content\.0\.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`/)
    const forged = await call(toolTurn([{ type: 'thinking', thinking: THOUGHT, signature: sign('something else') }]))
    t.match(forged.body.error.message, /Invalid `signature`/)
    t.equal((await call(toolTurn([{ type: 'thinking', thinking: THOUGHT, signature: sign(THOUGHT) }]))).status, 400, 'a block it never issued')
    up.requests.length = 0
    issued.length = 0
  })

  for (const [name, key] of [['ANTHROPIC_AUTH_TOKEN', { ANTHROPIC_AUTH_TOKEN: TEST_KEY }], ['ANTHROPIC_API_KEY', { ANTHROPIC_API_KEY: TEST_KEY }]] as const) {
    t.test(name, async t => {
      const before = up.requests.length
      const spied = spy.seen.length
      // Thinking is on by default: on a model name it does not know, Claude Code 2.1 asks for adaptive thinking.
      const r = await runClaude(['-p', 'run echo cc-think-7 with Bash', '--model', MODEL, '--allowedTools', 'Bash', '--output-format', 'json'],
        { ANTHROPIC_BASE_URL: url, ...key })
      t.equal(r.code, 0, `exit 0 ${r.err.slice(0, 300)} ${r.out.slice(0, 300)}`)
      const result = claudeResult(r.out)
      t.equal(result?.is_error, false, r.out.slice(0, 500))
      t.equal(result?.result, 'Thought it through: cc-think-7', 'the command ran and the final text came back')
      t.equal(result?.num_turns, 2, 'a tool turn, then the answer')
      t.match(result?.usage, { input_tokens: FIRST_USAGE.input_tokens + LAST_USAGE.input_tokens, output_tokens: FIRST_USAGE.output_tokens + LAST_USAGE.output_tokens }, 'the upstream usage reached Claude Code')

      const calls = up.requests.slice(before).filter(q => !q.path.includes('count_tokens'))
      t.equal(calls.length, 2, 'two upstream calls, none refused and retried')
      t.ok(calls.every(q => q.body.thinking?.type === 'enabled' || q.body.thinking?.type === 'adaptive'), 'thinking was on upstream')
      const loop = calls[1].body.messages as any[]
      const assistant = loop[lastAssistant(loop)]
      t.equal(JSON.stringify(assistant.content[0]), issued.at(-1), 'the signed thinking block came back byte-identical at the head of the assistant turn')
      t.match(assistant.content[1], { type: 'tool_use', id: 'toolu_think1', name: 'Bash' })
      t.ok(spy.seen.slice(spied).filter(c => c.route === 'messages').every(c => c.outcome.status === 200), 'every call through the gateway answered 200')
    })
  }
})
