/**
 * Session affinity with the real agents: Claude Code (headless) and Codex CLI (`codex exec`) against
 * a listening gateway whose model has two deployments of equal priority. The gateway's draw among
 * equals alternates (first, second, first...), so without affinity consecutive calls of one run
 * land on different deployments; with it, every call of a session goes where its first went: the
 * ids these clients send (Claude Code's X-Claude-Code-Session-Id, Codex's session-id header and
 * prompt_cache_key) are what the gateway keys on.
 *
 * Nothing leaves loopback: the clients' update checks, telemetry and analytics are off, and every
 * HTTP(S) proxy variable points at a closed local port (only 127.0.0.1 is exempt).
 */
import t from 'tap'
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, sse, chatChunk, chatUsageChunk, chatTextStream, DONE, type Recorded } from '../helpers/fake-upstream.ts'
import { outcomeSpy } from '../../testing.ts'
import { CLAUDE, CODEX, runClaude, runCodex, codexSetup, CODEX_EXEC } from '../helpers/agents.ts'
import type { ServerResponse } from 'node:http'

const COMMAND = 'echo affinity-$((6*7))'

/** The agent's shell tool among the tools it sent (Codex's, Claude Code's Bash), with arguments for COMMAND. */
function shellCall (body: { tools?: { function?: { name: string } }[] }): { name: string, args: Record<string, unknown> } | undefined {
  const names = (body.tools ?? []).map(x => x.function?.name)
  if (names.includes('exec_command')) return { name: 'exec_command', args: { cmd: COMMAND } }
  if (names.includes('shell_command')) return { name: 'shell_command', args: { command: COMMAND } }
  if (names.includes('shell')) return { name: 'shell', args: { command: ['bash', '-lc', COMMAND] } }
  if (names.includes('Bash')) return { name: 'Bash', args: { command: COMMAND, description: 'Print a word' } }
  return undefined
}

/** A chat upstream: an agent's first call gets a shell tool call, the call with its result plain text. */
function answer (req: Recorded, res: ServerResponse): Promise<void> {
  const body = req.body
  const toolDone = (body.messages as { role: string, content: unknown }[]).some(m => m.role === 'tool')
  const shell = shellCall(body)
  if (shell !== undefined && !toolDone) {
    return sse(res, [
      chatChunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_aff1', type: 'function', function: { name: shell.name, arguments: '' } }] }),
      chatChunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify(shell.args) } }] }),
      chatChunk({}, 'tool_calls'), chatUsageChunk(900, 12), DONE,
    ])
  }
  return sse(res, chatTextStream(['All ', 'done.']))
}

const missing = !existsSync(CLAUDE) || !existsSync(CODEX)
t.test('every call of a Claude Code run and of a Codex run goes to one deployment', { skip: missing && !process.env.CI ? 'the Claude Code or Codex binary is not installed' : false }, async t => {
  const up = await startFakeUpstream(answer)
  const spy = outcomeSpy()
  let draws = 0
  const app = await buildTestApp({
    doc: {
      providers: [
        { name: 'dep-a', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/v1`, apiKey: 'sk-up' } },
        { name: 'dep-b', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/v1`, apiKey: 'sk-up' } },
      ],
      models: [{ id: 'pool/agent', supported_parameters: ['temperature', 'top_p', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'metadata', 'thinking'], deployments: [{ provider: 'dep-a', model: 'up-model' }, { provider: 'dep-b', model: 'up-model' }] }],
      aliases: {},
    },
    pipeline: [AUTH_ENTRY, { plugin: 'outcome-spy' }],
    plugins: [spy.plugin],
    // Two equal deployments take one draw per call: first, second, first...
    random: () => (draws++ % 2 === 0 ? 0 : 0.999),
  })
  const base = await listen(app)
  const dir = mkdtempSync(join(tmpdir(), 'gw-affinity-'))
  t.teardown(async () => { await app.close(); await up.close(); rmSync(dir, { recursive: true, force: true }) })

  const providersOf = (from: number): string[] => spy.seen.slice(from).filter(s => s.route !== 'count_tokens' && s.outcome.provider !== undefined).map(s => s.outcome.provider as string)

  t.test('Claude Code', async t => {
    const home = join(dir, 'claude')
    mkdirSync(home)
    const before = spy.seen.length
    const r = await runClaude(['-p', 'Run the echo command.', '--model', 'pool/agent', '--allowedTools', 'Bash', '--output-format', 'json'],
      { ANTHROPIC_BASE_URL: base, ANTHROPIC_AUTH_TOKEN: TEST_KEY, ANTHROPIC_SMALL_FAST_MODEL: 'pool/agent', ANTHROPIC_DEFAULT_HAIKU_MODEL: 'pool/agent' },
      { home, offline: true, timeoutMs: 120_000 })
    t.equal(r.code, 0, `exit 0 ${r.err.slice(0, 300)}`)
    await spy.settled(before + 1)
    const used = providersOf(before)
    t.ok(used.length >= 2, `Claude Code made ${used.length} calls (the Bash call, then the answer)`)
    t.ok(up.requests.some(q => (q.body.messages as { role: string, content: unknown }[]).some(m => m.role === 'tool' && String(JSON.stringify(m.content)).includes('affinity-42'))), 'the command ran and its output went back upstream')
    t.same([...new Set(used)], [used[0]], `all on one deployment (${used.join(', ')})`)
  })

  t.test('Codex', async t => {
    const { env, work } = codexSetup(base, dir)
    const before = spy.seen.length
    const r = await runCodex([...CODEX_EXEC, '-m', 'pool/agent', '-c', 'model_provider="gw"', 'Run the echo command.'], env, work)
    t.equal(r.code, 0, `exit 0 ${r.err.slice(-500)}`)
    await spy.settled(before + 2)
    const used = providersOf(before)
    t.ok(used.length >= 2, `Codex made ${used.length} calls (the shell call, then the answer)`)
    t.ok(up.requests.slice(-1).some(q => (q.body.messages as { role: string, content: unknown }[]).some(m => m.role === 'tool' && String(JSON.stringify(m.content)).includes('affinity-42'))), 'the command ran and its output went back upstream')
    t.same([...new Set(used)], [used[0]], `all on one deployment (${used.join(', ')})`)
  })
})
