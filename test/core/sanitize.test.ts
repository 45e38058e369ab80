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
