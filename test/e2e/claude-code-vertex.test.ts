/**
 * @module test/e2e/claude-code-vertex – Claude Code 2.1 (headless, its native executable) on a
 * Claude model served by the vertex adapter, against the fake Vertex (service-account JWT verified
 * at its token endpoint, every call's bearer checked, bodies checked as Vertex does: no `model`,
 * `anthropic_version`, no system turn inside `messages`): a plain turn, a streamed turn and a tool turn.
 */
import t from 'tap'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeVertex } from '../../testing.ts'
import { runClaude, claudeResult as resultOf } from '../helpers/agents.ts'

t.test('Claude Code on a Claude model on Vertex: plain, streamed and tool turns', async t => {
  const fake = await startFakeVertex()
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: {
      providers: [{ name: 'vertex', adapter: 'vertex', config: { project: fake.project, location: fake.location, baseUrl: fake.origin, credentials: fake.serviceAccount } }],
      models: [{ id: 'vertex/claude-sonnet', input_modalities: ['text', 'image'], deployments: [{ provider: 'vertex', model: 'claude-sonnet-4-5@20250929' }] }],
    },
  })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await fake.close() })
  const env = { ANTHROPIC_BASE_URL: url, ANTHROPIC_AUTH_TOKEN: TEST_KEY }

  fake.reply({ content: [{ text: ['Hello', ' from', ' Vertex'] }] })
  const r = await runClaude(['-p', 'say hello', '--model', 'vertex/claude-sonnet', '--output-format', 'json'], env)
  t.equal(r.code, 0, `plain: exit 0 ${r.err.slice(0, 300)}`)
  t.match(resultOf(r.out), { is_error: false, result: 'Hello from Vertex' }, r.out.slice(0, 500))

  const s = await runClaude(['-p', 'stream me', '--model', 'vertex/claude-sonnet', '--output-format', 'stream-json', '--verbose', '--include-partial-messages'], env)
  t.equal(s.code, 0, `streamed: exit 0 ${s.err.slice(0, 300)}`)
  const lines = s.out.trim().split('\n').map(l => { try { return JSON.parse(l) } catch { return {} } })
  const deltas = lines.filter(l => l.type === 'stream_event' && l.event?.type === 'content_block_delta' && l.event.delta?.type === 'text_delta').map(l => l.event.delta.text as string)
  t.same(deltas, ['Hello', ' from', ' Vertex'], 'the answer arrived in pieces')
  t.match(lines.at(-1), { type: 'result', is_error: false })

  // A tool turn: the model asks for Bash, Claude Code runs it and sends the output back as a tool_result.
  let toolOutput: unknown
  fake.reply(req => {
    const msgs = (req.body as { messages: Array<{ content: unknown }> }).messages
    const last = msgs.at(-1)!.content
    const results = Array.isArray(last) ? last.filter((b: { type?: string }) => b.type === 'tool_result') : []
    if (results.length === 0) return { content: [{ toolUse: { id: 'toolu_cc1', name: 'Bash', input: { command: 'echo cc-43', description: 'Print a marker' } } }] }
    toolOutput = results[0]
    return { content: [{ text: 'done' }] }
  })
  const tl = await runClaude(['-p', 'run the marker', '--model', 'vertex/claude-sonnet', '--allowedTools', 'Bash', '--output-format', 'json'], env)
  t.equal(tl.code, 0, `tool: exit 0 ${tl.err.slice(0, 300)}`)
  t.match(resultOf(tl.out), { is_error: false, num_turns: 2, result: 'done' }, tl.out.slice(0, 500))
  t.match(JSON.stringify(toolOutput), /cc-43/, 'the command ran and its output went back to Vertex')
  const calls = fake.requests.filter(q => q.operation !== 'token')
  t.same(calls.filter(q => q.refused !== undefined).map(q => q.refused), [], 'no request refused (bearer, body)')
  t.ok(calls.filter(q => q.operation === 'rawPredict' || q.operation === 'streamRawPredict').length >= 4, 'Claude Code called Vertex through the gateway')
  t.equal(fake.issued.length, 1, 'one token for the whole run')
})
