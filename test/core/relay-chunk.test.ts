// One upstream chunk of whole SSE events goes out as the upstream's bytes while the translator
// relays each event as it came or drops it; the first event it changes turns the rest into text.
// Whatever the path, the client gets exactly the translator's output.
import t from 'tap'
import { SseParser } from '../../core/dispatch/sse.ts'
import { relayChunk } from '../../core/call/stream-out.ts'
import type { SseEvent, StreamTranslator } from '../../core/dispatch/provider.ts'

const ev = (text: string) => `data: {"t":"${text}"}\n\n`
// Multi-byte characters on both sides of the events dropped: byte offsets differ from string offsets.
const A = ev('h\u00e9llo \u{1F600}')
const B = ev('usage \u00fc')
const C = ev('w\u00f6rld')
const D = ev('\u4e2d\u6587')

/** A translator that drops the events whose data contains `drop` and rewrites those with `change`. */
function translator (rule: { drop?: string, change?: string } = {}): StreamTranslator {
  return {
    push: (e: SseEvent) => rule.drop !== undefined && e.data.includes(rule.drop) ? '' : rule.change !== undefined && e.data.includes(rule.change) ? e.raw.toUpperCase() : e.raw,
    end: () => '',
    fail: () => '',
    usage: undefined,
    startUsage: undefined,
    outputChars: 0,
    finished: false,
  }
}

function relay (events: string[], st: StreamTranslator, prefix = '') {
  const parser = new SseParser({})
  if (prefix !== '') parser.push(Buffer.from(prefix))
  const chunk = Buffer.from(events.join(''))
  const parsed = parser.push(chunk)
  return { chunk, out: relayChunk(chunk, parsed, st, parser.whole), whole: parser.whole }
}

t.test('every event relayed as it came: the chunk itself', async t => {
  const { chunk, out } = relay([A, B, C], translator())
  t.equal(out, chunk, 'the same Buffer')
})

for (const [name, events, drop, expected] of [
  ['the middle one dropped', [A, B, C], 'usage', A + C],
  ['the first one dropped', [B, A, C], 'usage', A + C],
  ['the last one dropped', [A, C, B], 'usage', A + C],
  ['two dropped, apart', [B, A, B, D], 'usage', A + D],
  ['every one dropped', [B, B], 'usage', ''],
] as const) {
  t.test(`${name}: the kept events' bytes, no text`, async t => {
    const { out, whole } = relay([...events], translator({ drop }))
    t.ok(whole)
    t.ok(Buffer.isBuffer(out), 'a Buffer')
    t.equal(out.toString(), expected)
  })
}

t.test('an event changed after one was dropped: text, with what was kept before it', async t => {
  const { out } = relay([A, B, C, D], translator({ drop: 'usage', change: 'w\u00f6rld' }))
  t.equal(typeof out, 'string')
  t.equal(out, A + C.toUpperCase() + D)
})

t.test('an event changed before any was dropped: text', async t => {
  const { out } = relay([A, C, B, D], translator({ drop: 'usage', change: 'w\u00f6rld' }))
  t.equal(out, A + C.toUpperCase() + D)
})

t.test('a chunk that is not whole events: text, whatever the translator does', async t => {
  // The chunk finishes an event the previous chunk began: its bytes are not the events' bytes.
  const { out, whole } = relay([' world"}\n\n', B, C], translator({ drop: 'usage' }), 'data: {"t":"hello')
  t.notOk(whole)
  t.equal(out, 'data: {"t":"hello world"}\n\n' + C)
})
