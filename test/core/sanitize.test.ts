import t from 'tap'
import { sanitizeUpstreamMessage } from '../../core/dispatch/upstream-errors.ts'

t.test('sanitizeUpstreamMessage – scrubs URLs, keys and bearer tokens', async t => {
  t.equal(
    sanitizeUpstreamMessage('see https://10.0.0.5:8000/v1?x=1 with key sk-live-abcdefgh and Bearer abc.def'),
    'see [url] with key [redacted] and Bearer [redacted]',
  )
  t.equal(sanitizeUpstreamMessage('messages: too long'), 'messages: too long', 'plain text is kept')
})

t.test('sanitizeUpstreamMessage – cuts first, then scrubs; the cut is marked', async t => {
  const long = 'a.'.repeat(16_000) + ' https://internal.example/secret'
  const out = sanitizeUpstreamMessage(long)
  t.ok(out.length <= 501, `cut to the limit (${out.length})`)
  t.ok(out.endsWith('…'), 'marked as cut')
  t.notMatch(out, /internal\.example/)
})

t.test('sanitizeUpstreamMessage – a word the cut splits is dropped, so no head of a secret survives', async t => {
  const msg = 'x '.repeat(247) + 'sk-abcdefghijklmnop more text after it'
  const out = sanitizeUpstreamMessage(msg)
  t.notMatch(out, /sk-a/, 'no partial key')
  t.ok(out.endsWith(' …'), out.slice(-10))
  const url = 'y '.repeat(240) + 'https://private.host.internal/a/b/c more'
  t.notMatch(sanitizeUpstreamMessage(url), /private|https/, 'no partial URL')
})

t.test('sanitizeUpstreamMessage – inputs that made the old patterns backtrack give the right output', async t => {
  const dotted = 'a-'.repeat(16_000)
  t.equal(sanitizeUpstreamMessage(dotted), '…', 'one 32 000-character word, cut: nothing of it kept')
  const spaced = 'token '.repeat(6000)
  const out = sanitizeUpstreamMessage(spaced)
  t.ok(out.startsWith('token token'))
  t.ok(out.length <= 501)
})

t.test('sanitizeUpstreamMessage – internal addresses, name=value secrets and AWS/Google key forms', async t => {
  const cases: Array<[string, string]> = [
    ['connect ECONNREFUSED 10.1.2.3:8443', 'connect ECONNREFUSED [address]'],
    ['upstream 192.168.0.7 said no', 'upstream [address] said no'],
    ['backend vllm-7.internal.svc:8000 is overloaded', 'backend [address] is overloaded'],
    ['localhost:11434 refused', '[address] refused'],
    ['peer [fd00::1]:443 reset', 'peer [address] reset'],
    ['from 2001:db8:85a3:0:0:8a2e:370:7334 only', 'from [address] only'],
    ['request failed: token=abc123XYZ&x=1', 'request failed: token=[redacted]&x=1'],
    ['X-Amz-Signature=0f1e2d3c4b5a and api_key: hunter2; done', 'X-Amz-Signature=[redacted] and api_key: [redacted]; done'],
    ['The security token included in the request is invalid: AKIAIOSFODNN7EXAMPLE', 'The security token included in the request is invalid: [redacted]'],
    ['secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY leaked', 'secret [redacted] leaked'],
    ['API key not valid: AIzaSyA-1234567890abcdefghijklmnopqrstu', 'API key not valid: [redacted]'],
    ['token ya29.a0AfH6SMBx-abcdefghijklmnop expired', 'token [redacted] expired'],
  ]
  for (const [input, want] of cases) t.equal(sanitizeUpstreamMessage(input), want, input)
  // What must stay: times, versions, counts, model names, ordinary words around a colon.
  for (const keep of [
    'at 2026-11-25T12:30:45Z the model was busy',
    'max_tokens: 4096 is over the limit of 8192',
    'model claude-sonnet-4-5 version 1.2.3 not found',
    'messages.0.content: Input should be a valid list',
    'Invalid value for tool_choice: expected auto',
  ]) t.equal(sanitizeUpstreamMessage(keep), keep, keep)
})
