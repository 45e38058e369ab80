/**
 * @module test/e2e/claude-code-bedrock – Claude Code 2.1 (headless, its native executable) on a
 * model served by the bedrock adapter, against the fake Bedrock (SigV4 verified, Converse bodies
 * checked as Bedrock does): a plain turn, a streamed turn and a tool turn.
 */
import t from 'tap'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeBedrock, BEDROCK_TEST_CREDENTIALS } from '../../testing.ts'
import { runClaude, claudeResult as resultOf } from '../helpers/agents.ts'

t.test('Claude Code on a Bedrock model: plain, streamed and tool turns', async t => {
  const fake = await startFakeBedrock()
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: {
      providers: [{ name: 'aws', adapter: 'bedrock', config: { region: 'us-east-1', baseUrl: fake.origin, credentials: { ...BEDROCK_TEST_CREDENTIALS } } }],
      models: [{ id: 'aws/claude-sonnet', input_modalities: ['text', 'image'], deployments: [{ provider: 'aws', model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' }] }],
    },
  })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await fake.close() })
  const env = { ANTHROPIC_BASE_URL: url, ANTHROPIC_AUTH_TOKEN: TEST_KEY }

  fake.reply({ content: [{ text: ['Hello', ' from', ' Bedrock'] }] })
  const r = await runClaude(['-p', 'say hello', '--model', 'aws/claude-sonnet', '--output-format', 'json'], env)
  t.equal(r.code, 0, `plain: exit 0 ${r.err.slice(0, 300)}`)
  t.match(resultOf(r.out), { is_error: false, result: 'Hello from Bedrock' }, r.out.slice(0, 500))

  const s = await runClaude(['-p', 'stream me', '--model', 'aws/claude-sonnet', '--output-format', 'stream-json', '--verbose', '--include-partial-messages'], env)
  t.equal(s.code, 0, `streamed: exit 0 ${s.err.slice(0, 300)}`)
  const lines = s.out.trim().split('\n').map(l => { try { return JSON.parse(l) } catch { return {} } })
  const deltas = lines.filter(l => l.type === 'stream_event' && l.event?.type === 'content_block_delta' && l.event.delta?.type === 'text_delta').map(l => l.event.delta.text as string)
  t.same(deltas, ['Hello', ' from', ' Bedrock'], 'the answer arrived in pieces')
  t.match(lines.at(-1), { type: 'result', is_error: false })

  // A tool turn: Bedrock asks for Bash, Claude Code runs it and sends the output back as a toolResult.
  let toolOutput: unknown
  fake.reply(req => {
    const msgs = (req.body as { messages: Array<{ content: Array<Record<string, unknown>> }> }).messages
    const results = msgs.at(-1)!.content.filter(b => 'toolResult' in b)
    if (results.length === 0) return { content: [{ toolUse: { toolUseId: 'tooluse_cc1', name: 'Bash', input: { command: 'echo cc-42', description: 'Print a marker' } } }] }
    toolOutput = results[0].toolResult
    return { content: [{ text: 'done' }] }
  })
  const tl = await runClaude(['-p', 'run the marker', '--model', 'aws/claude-sonnet', '--allowedTools', 'Bash', '--output-format', 'json'], env)
  t.equal(tl.code, 0, `tool: exit 0 ${tl.err.slice(0, 300)}`)
  t.match(resultOf(tl.out), { is_error: false, num_turns: 2, result: 'done' }, tl.out.slice(0, 500))
  t.match(JSON.stringify(toolOutput), /cc-42/, 'the command ran and its output went back to Bedrock')
  t.ok(fake.requests.every(q => q.auth === 'sigv4' || q.operation === 'count-tokens'), 'every request signed')
  t.ok(fake.requests.filter(q => q.operation !== 'count-tokens').length >= 4, 'Claude Code called Bedrock through the gateway')
})
