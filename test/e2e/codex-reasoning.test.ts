/**
 * Codex CLI (`codex exec`) with reasoning on, against a listening gateway whose model is on a
 * messages upstream that thinks: its first answer is a signed thinking block and a call of Codex's
 * shell tool; the next request (the command's output) must carry thinking on and start the tool
 * loop's assistant turn with that very block, as Anthropic requires, else the upstream refuses
 * it. Codex keeps the reasoning item the gateway sent (its encrypted_content) and hands it back.
 *
 * Offline, as test/e2e/codex-cli.test.ts: a temporary CODEX_HOME, the gateway as a custom model
 * provider, every proxy variable on a closed local port so nothing reaches another host.
 */
import t from 'tap'
import { createHmac } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ServerResponse } from 'node:http'
import { buildTestApp, listen, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, sse, msgEvent, messagesTextStream, type Recorded } from '../helpers/fake-upstream.ts'
import { runCodex, codexSetup, CODEX_EXEC, codexEvents, codexSkip } from '../helpers/agents.ts'

const MODEL = 'msgvendor/thinker'
const COMMAND = 'echo codex-$((6*7))'
const OUTPUT = 'codex-42'
const FINAL = 'The command printed codex-42.'
const THOUGHT = 'I should run the echo command to see what it prints.'
const sign = (text: string): string => 'sig_' + createHmac('sha256', 'upstream-key').update(text).digest('base64')

function refuse (res: ServerResponse, message: string): void {
  json(res, 400, { type: 'error', error: { type: 'invalid_request_error', message } })
}

function toolResult (body: { messages: unknown }): string | undefined {
  for (const m of body.messages as { role: string, content: string | { type: string, content?: unknown }[] }[]) {
    if (Array.isArray(m.content)) for (const b of m.content) if (b.type === 'tool_result') return typeof b.content === 'string' ? b.content : JSON.stringify(b.content)
  }
  return undefined
}

function shellCall (body: { tools?: { name: string }[] }): { name: string, args: Record<string, unknown> } {
  const names = (body.tools ?? []).map(x => x.name)
  if (names.includes('exec_command')) return { name: 'exec_command', args: { cmd: COMMAND } }
  if (names.includes('shell_command')) return { name: 'shell_command', args: { command: COMMAND } }
  if (names.includes('shell')) return { name: 'shell', args: { command: ['bash', '-lc', COMMAND] } }
  throw new Error(`no shell tool among ${names.join(', ')}`)
}

/** The thinking upstream: Anthropic's rules for thinking in a tool loop, with its own signatures. */
function thinker (req: Recorded, res: ServerResponse): void {
  const body = req.body
  if (body.thinking?.type !== 'enabled') return refuse(res, 'thinking: this test model is only called with thinking on')
  for (const [i, m] of (body.messages as any[]).entries()) {
    if (m.role !== 'assistant' || !Array.isArray(m.content)) continue
    for (const [j, b] of m.content.entries()) if (b.type === 'thinking' && b.signature !== sign(b.thinking)) return refuse(res, `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`)
  }
  const result = toolResult(body)
  if (result === undefined) {
    const { name, args } = shellCall(body)
    return void sse(res, [
      msgEvent('message_start', { message: { id: 'msg_th1', type: 'message', role: 'assistant', model: 'up', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 900, output_tokens: 1 } } }),
      msgEvent('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
      msgEvent('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: THOUGHT } }),
      msgEvent('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: sign(THOUGHT) } }),
      msgEvent('content_block_stop', { index: 0 }),
      msgEvent('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'toolu_sh1', name, input: {} } }),
      msgEvent('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: JSON.stringify(args) } }),
      msgEvent('content_block_stop', { index: 1 }),
      msgEvent('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 30 } }),
      msgEvent('message_stop', {}),
    ])
  }
  const turns = body.messages as any[]
  const k = turns.findIndex(m => m.role === 'assistant' && Array.isArray(m.content) && m.content.some((b: { type: string }) => b.type === 'tool_use'))
  const first = turns[k]?.content?.[0]?.type
  if (first !== 'thinking') return refuse(res, `messages.${k}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block`)
  const text = result.includes(OUTPUT) ? FINAL : `The command output was not seen: ${result.slice(0, 200)}`
  return void sse(res, messagesTextStream([text.slice(0, 10), text.slice(10)]))
}

t.test('codex exec with reasoning on a messages upstream gives the signed thinking back in its tool loop', { skip: codexSkip }, async t => {
  const up = await startFakeUpstream(thinker)
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: {
      providers: [{ name: 'up-msg', adapter: 'anthropic-compatible', config: { baseUrl: up.origin, apiKey: 'sk-ant-upstream' } }],
      models: [{ id: MODEL, supported_parameters: ['max_tokens', 'tools', 'tool_choice', 'stream', 'thinking', 'temperature', 'metadata'], deployments: [{ provider: 'up-msg', model: 'up-thinker' }] }],
    },
  })
  const url = await listen(app)
  const dir = mkdtempSync(join(tmpdir(), 'gw-codex-reasoning-'))
  t.teardown(async () => { await app.close(); await up.close(); rmSync(dir, { recursive: true, force: true }) })
  const { env, work } = codexSetup(url, dir, { reasoningEffort: 'medium' })

  const r = await runCodex([...CODEX_EXEC, '-m', MODEL, '-c', 'model_provider="gw"', 'Run the echo command and tell me what it printed.'], env, work)
  const events = codexEvents(r)
  t.equal(r.code, 0, r.code === 0 ? 'codex exec exited 0' : `codex exec exited ${r.code}; stderr: ${r.err.slice(-1500)}; stdout: ${r.out.slice(-1500)}`)
  const exec = events.find(e => e.type === 'item.completed' && e.item?.type === 'command_execution')
  t.match(exec?.item?.aggregated_output, OUTPUT, 'Codex ran the command the upstream asked for')
  const message = events.filter(e => e.type === 'item.completed' && e.item?.type === 'agent_message').at(-1)
  t.equal(message?.item?.text, FINAL, 'the turn ends with the upstream\'s text after the tool result')
  t.ok(up.requests.length >= 2, 'two model calls went upstream')
  const loop = up.requests.find(q => toolResult(q.body) !== undefined)?.body
  t.same(loop?.thinking, { type: 'enabled', budget_tokens: 2048 }, 'thinking stayed on in the tool loop')
  const turn = loop?.messages.find((m: { role: string, content: string | { type: string }[] }) => m.role === 'assistant' && Array.isArray(m.content) && m.content.some((b: { type: string }) => b.type === 'tool_use'))
  t.same(turn?.content[0], { type: 'thinking', thinking: THOUGHT, signature: sign(THOUGHT) }, 'the signed thinking came back first in its turn')
})
