/**
 * Codex CLI (`codex exec`, the @openai/codex package of test/package.json) against a listening gateway, offline:
 * the gateway is a custom model provider (`wire_api = "responses"`) in a temporary CODEX_HOME, and
 * the loopback fake upstream (chat, then messages) answers the first turn with a call of Codex's
 * shell tool and the next, once the command's output came back, with text. The run must execute
 * the command and finish the turn with that text; a plain prompt gets text alone. The same on the
 * embedded default's echo models (chat and messages face), whose tool calls follow the tool's schema,
 * and with no model flag at all (Codex's own default model name, which the embedded default's
 * aliases map to an echo model).
 *
 * Nothing leaves loopback: OPENAI_API_KEY is unset, the provider is set explicitly, update checks
 * and analytics are off, and every HTTP(S) proxy variable points at a closed local port (only
 * 127.0.0.1 is exempt), so a call to any other host fails instead of reaching the internet.
 */
import t from 'tap'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildTestApp, listen, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, sse, chatChunk, chatUsageChunk, chatTextStream, messagesTextStream, msgEvent, DONE, type Recorded } from '../helpers/fake-upstream.ts'
import { runCodex, codexSetup, CODEX_EXEC as EXEC, codexEvents as eventsOf, lastMessage, codexSkip as skip } from '../helpers/agents.ts'
import type { ServerResponse } from 'node:http'

// The command's output ("codex-42") is not in its text: finding it upstream proves the command ran.
const COMMAND = 'echo codex-$((6*7))'
const OUTPUT = 'codex-42'
const FINAL = 'The command printed codex-42.'
// A prompt the fake upstreams answer with text alone.
const PLAIN = 'Just say hello, no tools.'
const PLAIN_ANSWER = 'Hello from the upstream.'

/** The shell tool's output as the upstream received it, if any. */
function toolResultIn (kind: 'chat' | 'messages', body: { messages: unknown }): string | undefined {
  for (const m of body.messages as { role: string, content: string | { type: string, content?: unknown }[] }[]) {
    if (kind === 'chat' && m.role === 'tool') return typeof m.content === 'string' ? m.content : JSON.stringify(m.content)
    if (kind === 'messages' && Array.isArray(m.content)) {
      for (const b of m.content) if (b.type === 'tool_result') return typeof b.content === 'string' ? b.content : JSON.stringify(b.content)
    }
  }
  return undefined
}

/** Codex's shell tool among the tools it sent: `exec_command` ({cmd}) in 0.169 and later, older `shell` ({command: [...]}). */
function shellCall (kind: 'chat' | 'messages', body: { tools?: { function?: { name: string }, name?: string }[] }): { name: string, args: Record<string, unknown> } {
  const names = (body.tools ?? []).map(x => kind === 'chat' ? x.function?.name : x.name)
  if (names.includes('exec_command')) return { name: 'exec_command', args: { cmd: COMMAND } }
  if (names.includes('shell_command')) return { name: 'shell_command', args: { command: COMMAND } }
  if (names.includes('shell')) return { name: 'shell', args: { command: ['bash', '-lc', COMMAND] } }
  throw new Error(`no shell tool among ${names.join(', ')}`)
}

function answer (kind: 'chat' | 'messages') {
  return (req: Recorded, res: ServerResponse) => {
    if (JSON.stringify(req.body.messages).includes(PLAIN)) {
      return sse(res, kind === 'chat' ? chatTextStream([PLAIN_ANSWER.slice(0, 6), PLAIN_ANSWER.slice(6)]) : messagesTextStream([PLAIN_ANSWER.slice(0, 6), PLAIN_ANSWER.slice(6)]))
    }
    const result = toolResultIn(kind, req.body)
    if (result === undefined) {
      const { name, args } = shellCall(kind, req.body)
      const a = JSON.stringify(args)
      if (kind === 'chat') {
        return sse(res, [
          chatChunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_sh1', type: 'function', function: { name, arguments: '' } }] }),
          chatChunk({ tool_calls: [{ index: 0, function: { arguments: a } }] }),
          chatChunk({}, 'tool_calls'), chatUsageChunk(900, 12), DONE,
        ])
      }
      return sse(res, [
        msgEvent('message_start', { message: { id: 'msg_sh1', type: 'message', role: 'assistant', model: 'up', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 900, output_tokens: 1 } } }),
        msgEvent('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_sh1', name, input: {} } }),
        msgEvent('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: a } }),
        msgEvent('content_block_stop', { index: 0 }),
        msgEvent('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 12 } }),
        msgEvent('message_stop', {}),
      ])
    }
    const text = result.includes(OUTPUT) ? FINAL : `The command output was not seen: ${result.slice(0, 200)}`
    return sse(res, kind === 'chat' ? chatTextStream([text.slice(0, 10), text.slice(10)]) : messagesTextStream([text.slice(0, 10), text.slice(10)]))
  }
}

t.test('codex exec completes a plain turn and a turn that runs a shell command, on a chat and a messages upstream', { skip }, async t => {
  const chatUp = await startFakeUpstream(answer('chat'))
  const msgUp = await startFakeUpstream(answer('messages'))
  const app = await buildTestApp({ doc: upstreamDoc(chatUp.origin, msgUp.origin), pipeline: [AUTH_ENTRY] })
  const url = await listen(app)
  const dir = mkdtempSync(join(tmpdir(), 'gw-codex-'))
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close(); rmSync(dir, { recursive: true, force: true }) })
  const { env, work } = codexSetup(url, dir)

  for (const [kind, model, up] of [['chat', 'vendor/chat-model', chatUp], ['messages', 'msgvendor/msg-model', msgUp]] as const) {
    const before = up.requests.length
    const r = await runCodex([...EXEC, '-m', model, '-c', 'model_provider="gw"', 'Run the echo command and tell me what it printed.'], env, work)
    const events = eventsOf(r)
    t.equal(r.code, 0, r.code === 0 ? `${kind}: codex exec exited 0` : `${kind}: codex exec exited ${r.code}; stderr: ${r.err.slice(-1000)}`)
    const exec = events.find(e => e.type === 'item.completed' && e.item?.type === 'command_execution')
    t.ok(exec, `${kind}: Codex ran a command`)
    t.match(exec?.item?.command, /echo codex-/, `${kind}: the command the upstream asked for`)
    t.match(exec?.item?.aggregated_output, OUTPUT, `${kind}: and read its output`)
    t.equal(lastMessage(events), FINAL, `${kind}: the turn ends with the upstream's text after the tool result`)
    t.ok(events.some(e => e.type === 'turn.completed'), `${kind}: turn completed`)
    const reqs = up.requests.slice(before)
    t.ok(reqs.length >= 2, `${kind}: at least two model calls went upstream`)
    t.ok(reqs.every(q => q.body.model === 'up-model'), `${kind}: under the upstream model name`)
    t.ok(reqs.some(q => (toolResultIn(kind, q.body) ?? '').includes(OUTPUT)), `${kind}: the command's output went back upstream`)

    const plainBefore = up.requests.length
    const p = await runCodex([...EXEC, '-m', model, PLAIN], env, work)
    const plain = eventsOf(p)
    t.equal(p.code, 0, p.code === 0 ? `${kind}: plain turn exited 0` : `${kind}: plain turn exited ${p.code}; stderr: ${p.err.slice(-1000)}`)
    t.equal(lastMessage(plain), PLAIN_ANSWER, `${kind}: the plain turn's answer`)
    t.notOk(plain.some(e => e.item?.type === 'command_execution'), `${kind}: no command in a plain turn`)
    t.equal(up.requests.length - plainBefore, 1, `${kind}: one model call`)
  }
})

t.test('codex exec on the echo models (embedded default): plain and tool turns on the chat and the messages face', { skip }, async t => {
  const app = await buildTestApp({ pipeline: [AUTH_ENTRY] })
  const url = await listen(app)
  const dir = mkdtempSync(join(tmpdir(), 'gw-codex-echo-'))
  t.teardown(async () => { await app.close(); rmSync(dir, { recursive: true, force: true }) })
  const { env, work } = codexSetup(url, dir)
  for (const model of ['echo/echo-1', 'msgvendor/echo-1']) {
    const p = await runCodex([...EXEC, '-m', model, 'hello from codex'], env, work)
    t.equal(p.code, 0, p.code === 0 ? `${model}: plain turn exited 0` : `${model}: plain turn exited ${p.code}; stderr: ${p.err.slice(-1000)}`)
    // The messages face joins Codex's consecutive user messages (its environment context, then the
    // prompt) into one, which echo answers whole.
    t.match(lastMessage(eventsOf(p)), /^Echo: (?:[\s\S]*\s)?hello from codex$/, `${model}: echo answered the prompt`)

    // echo calls the first tool with arguments built from its schema, the text after /tool in its
    // string fields: Codex's exec_command gets `cmd` = the command below.
    const r = await runCodex([...EXEC, '-m', model, `/tool ${COMMAND}`], env, work)
    const events = eventsOf(r)
    t.equal(r.code, 0, r.code === 0 ? `${model}: tool turn exited 0` : `${model}: tool turn exited ${r.code}; stderr: ${r.err.slice(-1000)}`)
    const exec = events.find(e => e.type === 'item.completed' && e.item?.type === 'command_execution')
    t.match(exec?.item?.aggregated_output, OUTPUT, `${model}: Codex ran the command echo asked for`)
    t.match(lastMessage(events), new RegExp(`^Echo: tool said [\\s\\S]*${OUTPUT}`), `${model}: the output went back to echo, which ended the turn`)
  }
})

t.test('codex exec "hi" with no model flag: Codex asks for its default model, which the embedded default\'s aliases map', { skip }, async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-codex-default-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const { env, work } = codexSetup('http://127.0.0.1:9', dir)
  const first = await buildTestApp({ pipeline: [AUTH_ENTRY], doc: { aliases: {} } })
  const firstUrl = await listen(first)
  // The config has no `model` and the command no -m: the name Codex sends is its own default, read
  // back from the gateway's 404 (it names the model), so a Codex release with a new default is
  // followed.
  writeFileSync(join(env.CODEX_HOME!, 'config.toml'), readFileSync(join(env.CODEX_HOME!, 'config.toml'), 'utf8').replace('http://127.0.0.1:9', firstUrl))
  const miss = await runCodex([...EXEC, 'hi'], env, work)
  await first.close()
  t.not(miss.code, 0, 'an unknown default model fails the run')
  const name = /The model \\?"([^"\\]+)\\?" does not exist/.exec(miss.out + miss.err)?.[1]
  t.ok(name, `Codex's default model name is in the gateway's 404: ${name}`)
  if (!name) return

  // The embedded default's aliases (what `npm start` serves) map it to an echo model.
  const app = await buildTestApp({ pipeline: [AUTH_ENTRY] })
  const url = await listen(app)
  t.teardown(() => app.close())
  writeFileSync(join(env.CODEX_HOME!, 'config.toml'), readFileSync(join(env.CODEX_HOME!, 'config.toml'), 'utf8').replace(firstUrl, url))
  const r = await runCodex([...EXEC, 'hi'], env, work)
  t.equal(r.code, 0, r.code === 0 ? 'codex exec "hi" exited 0' : `exited ${r.code}; stderr: ${r.err.slice(-1000)}`)
  t.match(lastMessage(eventsOf(r)), /^Echo: (?:[\s\S]*\s)?hi$/, `answered through the embedded default's alias for ${name}`)
})
