/**
 * @module test/e2e/agents-gemini – Claude Code 2.1 and Codex CLI (headless, offline) on a Gemini 3
 * model served by the gemini adapter, against the fake Gemini API, which refuses a follow-up whose
 * function call lost the thought signature it was given: each agent runs a tool loop across turns
 * (the model calls the shell tool, the agent runs it and sends the output back with the signature).
 */
import t, { type Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeGemini, GEMINI_TEST_KEY, type GeminiRecorded, type GeminiReply } from '../../testing.ts'
import { runClaude, claudeResult as resultOf, runCodex, codexSetup, CODEX_EXEC, codexEvents, codexSkip, lastMessage } from '../helpers/agents.ts'

const UPSTREAM = 'gemini-3-pro-preview'
const OUTPUT = 'gem-42'

type Parts = Array<Record<string, unknown>>

/** The function response of the request's last content, if it holds one. */
function responseOf (req: GeminiRecorded): Record<string, unknown> | undefined {
  const contents = (req.body as { contents: Array<{ parts: Parts }> }).contents
  const r = contents.at(-1)!.parts.find(p => 'functionResponse' in p)
  return r?.functionResponse as Record<string, unknown> | undefined
}

/** The shell tool among a request's function declarations, and arguments that run `command`. */
function shellCall (req: GeminiRecorded, command: string): { name: string, args: Record<string, unknown> } {
  const decls = ((req.body as { tools?: Array<{ functionDeclarations?: Array<{ name: string }> }> }).tools ?? []).flatMap(x => x.functionDeclarations ?? [])
  const names = decls.map(d => d.name)
  if (names.includes('Bash')) return { name: 'Bash', args: { command, description: 'Print a marker' } }
  if (names.includes('exec_command')) return { name: 'exec_command', args: { cmd: command } }
  if (names.includes('shell_command')) return { name: 'shell_command', args: { command } }
  if (names.includes('shell')) return { name: 'shell', args: { command: ['bash', '-lc', command] } }
  throw new Error(`no shell tool among ${names.join(', ')}`)
}

async function gateway (t: Test) {
  const fake = await startFakeGemini({ models: [UPSTREAM] })
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: {
      providers: [{ name: 'google', adapter: 'gemini', config: { apiKey: GEMINI_TEST_KEY, baseUrl: fake.origin } }],
      models: [{ id: 'google/gemini-3-pro', input_modalities: ['text', 'image'], deployments: [{ provider: 'google', model: UPSTREAM }] }],
    },
  })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await fake.close() })
  return { fake, url }
}

/** The scripted model: asks for the shell once per user turn, then answers with what the tool printed. */
function shellLoop (command: string, seen: unknown[]) {
  return (req: GeminiRecorded): GeminiReply => {
    const r = responseOf(req)
    if (r === undefined) {
      const { name, args } = shellCall(req, command)
      return { parts: [{ text: 'Running it.' }, { functionCall: { name, args } }], usage: { prompt: 900, candidates: 20, thoughts: 40 } }
    }
    seen.push(r)
    return { parts: [{ text: ['The command printed ', JSON.stringify(r).includes(OUTPUT) ? OUTPUT : 'nothing'] }], usage: { prompt: 950, candidates: 8 } }
  }
}

t.test('Claude Code on a Gemini 3 model: a tool loop whose signature comes back', async t => {
  const { fake, url } = await gateway(t)
  const seen: unknown[] = []
  fake.reply(shellLoop('echo gem-$((6*7))', seen))
  const env = { ANTHROPIC_BASE_URL: url, ANTHROPIC_AUTH_TOKEN: TEST_KEY }
  const r = await runClaude(['-p', 'run the marker', '--model', 'google/gemini-3-pro', '--allowedTools', 'Bash', '--output-format', 'json'], env, { offline: true })
  t.equal(r.code, 0, `exit 0 ${r.err.slice(0, 300)}`)
  t.match(resultOf(r.out), { is_error: false, num_turns: 2, result: `The command printed ${OUTPUT}` }, r.out.slice(0, 800))
  t.equal(seen.length, 1, 'the tool output went back to Gemini')
  const refused = fake.requests.filter(q => q.refused !== undefined)
  t.same(refused.map(q => q.refused), [], 'no request lost its signature')
  const loop = fake.requests.find(q => responseOf(q) !== undefined)!
  const model = (loop.body as { contents: Array<{ role: string, parts: Parts }> }).contents.filter(c => c.role === 'model').at(-1)!
  const call = model.parts.find(p => 'functionCall' in p)!
  t.ok(fake.issued.has(String(call.thoughtSignature)), 'the function call came back with its signature')
})

t.test('Codex CLI on a Gemini 3 model: a tool loop whose signature comes back', { skip: codexSkip }, async t => {
  const { fake, url } = await gateway(t)
  const seen: unknown[] = []
  fake.reply(shellLoop('echo gem-$((6*7))', seen))
  const dir = mkdtempSync(join(tmpdir(), 'gw-codex-gemini-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const { env, work } = codexSetup(url, dir)
  const r = await runCodex([...CODEX_EXEC, '-m', 'google/gemini-3-pro', '-c', 'model_provider="gw"', 'Run the echo command and tell me what it printed.'], env, work)
  const events = codexEvents(r)
  t.equal(r.code, 0, r.code === 0 ? 'codex exec exited 0' : `codex exec exited ${r.code}; stderr: ${r.err.slice(-1500)}; stdout: ${r.out.slice(-1500)}; refused: ${fake.requests.map(q => q.refused).filter(Boolean).join(' | ')}`)
  const exec = events.find(e => e.type === 'item.completed' && e.item?.type === 'command_execution')
  t.match(exec?.item?.aggregated_output, OUTPUT, 'Codex ran the command Gemini asked for')
  t.equal(lastMessage(events), `The command printed ${OUTPUT}`)
  t.same(fake.requests.filter(q => q.refused !== undefined).map(q => q.refused), [], 'no request lost its signature')
  t.equal(seen.length, 1)
})
