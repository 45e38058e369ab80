/**
 * Codex CLI (`codex exec`, its current release) through a listening gateway whose Responses
 * upstream refuses the prompt inside its stream (200, response.created, then response.failed with
 * `context_length_exceeded`), as the Responses API does. Codex must get the refusal itself, a 400
 * carrying the upstream's message, where it used to get the gateway's generic 502.
 */
import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildTestApp, listen, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, sse, responsesTextStream } from '../helpers/fake-upstream.ts'
import { outcomeSpy } from '../../testing.ts'
import { runCodex, codexSetup, CODEX_EXEC as EXEC, codexEvents, codexSkip as skip } from '../helpers/agents.ts'

const MESSAGE = 'Your input exceeds the context window of this model. Please adjust your input and try again.'

t.test('Codex gets the upstream\'s in-stream context-window refusal as a 400 with its message', { skip }, async t => {
  const up = await startFakeUpstream((_req, res) => {
    const failed = { id: 'resp_1', object: 'response', status: 'failed', error: { code: 'context_length_exceeded', message: MESSAGE }, output: [] }
    void sse(res, [responsesTextStream(['x'])[0], `event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', sequence_number: 1, response: failed })}\n\n`])
  })
  const spy = outcomeSpy()
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY, { plugin: 'outcome-spy' }],
    plugins: [spy.plugin],
    doc: {
      providers: [{ name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${up.origin}/v1`, apiKey: 'sk-resp' } }],
      // Codex sends its web_search tool on every call: a Responses upstream would run it, so the
      // model lists and prices it (else the gateway refuses the call before the upstream).
      models: [{ id: 'openai/small-window', supported_parameters: ['tools', 'tool_choice', 'stream', 'web_search'], price: { input: 1, output: 2, perUse: { web_search: 10 } }, deployments: [{ provider: 'up-resp', model: 'gpt-up' }] }],
    },
  })
  const url = await listen(app)
  const dir = mkdtempSync(join(tmpdir(), 'gw-codex-err-'))
  t.teardown(async () => { await app.close(); await up.close(); rmSync(dir, { recursive: true, force: true }) })

  const { env, work } = codexSetup(url, dir)
  const r = await runCodex([...EXEC, '--model', 'openai/small-window', 'summarize the repository'], env, work)
  t.not(r.code, 0, 'the run fails')
  const errors = codexEvents(r).filter(e => e.type === 'error' || e.type === 'turn.failed').map(e => JSON.stringify(e))
  t.ok(errors.length > 0, `an error event ${r.out.slice(-600)} ${r.err.slice(-300)}`)
  t.match(errors.join('\n'), /exceeds the context window/, 'with the upstream\'s message')
  t.equal(up.requests.length, 1, 'the upstream was asked once')
  const answered = spy.seen.filter(s => s.route === 'responses')
  t.ok(answered.length >= 1)
  for (const s of answered) {
    t.equal(s.outcome.status, 400)
    t.equal(s.outcome.error?.code, 'GW_ERR_UPSTREAM_BAD_REQUEST')
  }
})
