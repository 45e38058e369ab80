/**
 * @module Claude Code (its current release, headless) through a listening gateway whose messages
 * upstream refuses the prompt inside its stream (200, message_start, then an invalid_request_error
 * event), as Anthropic's API and proxies in front of it can. Claude Code must get the refusal
 * itself (a 400 with the upstream's message), which it reports and does not retry; a generic 5xx
 * would have it retry the same hopeless request with backoff.
 */
import t from 'tap'
import { TEST_KEY } from '../helpers/build-test-app.ts'
import { json, msgEvent, sse, startFakeUpstream } from '../helpers/fake-upstream.ts'
import { runClaude, claudeResult, claudeCodeGateway } from '../helpers/agents.ts'

const MODEL = 'anthropic/small-window'
const TOO_LONG = 'prompt is too long: 212000 tokens > 200000 maximum'

t.test('Claude Code gets the upstream\'s in-stream refusal as its 400 and does not retry it', async t => {
  const up = await startFakeUpstream((req, res) => {
    if (req.path.split('?')[0].endsWith('/count_tokens')) return json(res, 200, { input_tokens: 10 })
    void sse(res, [
      msgEvent('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: req.body.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 212000, output_tokens: 1 } } }),
      msgEvent('ping', {}),
      msgEvent('error', { error: { type: 'invalid_request_error', message: TOO_LONG } }),
    ])
  })
  const { url, spy } = await claudeCodeGateway(t, up.origin, MODEL, () => up.close())

  const r = await runClaude(['-p', 'summarize the repository', '--model', MODEL, '--output-format', 'json'], { ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: TEST_KEY }, { timeoutMs: 90_000 })
  const result = claudeResult(r.out)
  t.ok(result !== undefined, `a JSON result ${r.err.slice(0, 300)} ${r.out.slice(0, 300)}`)
  t.equal(result?.is_error, true, 'the run ends in the error')
  t.match(String(result?.result), /prompt is too long/i, 'with the upstream\'s reason, which Claude Code knows how to act on')
  const calls = up.requests.filter(q => !q.path.includes('count_tokens') && q.body.model === 'claude-up')
  t.equal(calls.length, 1, 'asked once: a 400 is not retried')
  const answered = spy.seen.filter(s => s.route === 'messages')
  t.ok(answered.length >= 1)
  for (const s of answered) {
    t.equal(s.outcome.status, 400)
    t.equal(s.outcome.error?.code, 'GW_ERR_UPSTREAM_BAD_REQUEST')
    t.equal(s.outcome.usage, undefined, 'nothing billed')
  }
})
