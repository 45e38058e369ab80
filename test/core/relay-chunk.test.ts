// One upstream chunk of whole SSE events goes out as the upstream's bytes while the translator
// relays each event as it came or drops it; the first event it changes turns the rest into text.
// Whatever the path, the client gets exactly the translator's output.
import t from 'tap'
import { SseParser } from '../../core/dispatch/sse.ts'
import { SseWriter } from '../../core/dispatch/sse-writer.ts'
import type { EventSink, SseEvent, StreamTranslator } from '../../core/dispatch/provider.ts'

const ev = (text: string) => `data: {"t":"${text}"}\n\n`
// Multi-byte characters on both sides of the events dropped: byte offsets differ from string offsets.
const A = ev('h\u00e9llo \u{1F600}')
const B = ev('usage \u00fc')
const C = ev('w\u00f6rld')
const D = ev('\u4e2d\u6587')

/**
 * A translator that drops the events whose data contains `drop`, rewrites those with `change`,
 * and after those with `add` (relayed as they came) emits an event of its own.
 */
function translator (rule: { drop?: string, change?: string, add?: string } = {}): StreamTranslator {
  return {
    push: (e: SseEvent, out: EventSink) => {
      if (rule.drop !== undefined && e.data.includes(rule.drop)) return
      if (rule.change !== undefined && e.data.includes(rule.change)) return out.relay({ ...e, raw: e.raw.toUpperCase() })
      out.relay(e)
      if (rule.add !== undefined && e.data.includes(rule.add)) out.event(undefined, { t: 'added' })
    },
    end: () => {},
    fail: () => {},
    blocked: () => {},
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
  return { chunk, out: new SseWriter().chunk(chunk, parsed, st, parser.whole), whole: parser.whole }
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

t.test('an event of its own after one relayed as it came: text, in order', async t => {
  const { out } = relay([A, B, C], translator({ drop: 'usage', add: 'h\u00e9llo' }))
  t.equal(typeof out, 'string')
  t.equal(out, A + ev('added') + C)
})

t.test('the writer is whole again after a chunk that turned into text', async t => {
  const w = new SseWriter()
  const st = translator({ change: 'w\u00f6rld' })
  const parse = (events: string[]) => {
    const chunk = Buffer.from(events.join(''))
    const parser = new SseParser({})
    return { chunk, parsed: parser.push(chunk), whole: parser.whole }
  }
  const first = parse([A, C])
  t.equal(w.chunk(first.chunk, first.parsed, st, first.whole), A + C.toUpperCase())
  const second = parse([A, B])
  t.equal(w.chunk(second.chunk, second.parsed, st, second.whole), second.chunk, 'the next whole chunk goes out as its bytes')
})

t.test('a chunk with bytes that are not UTF-8: the events kept, never bytes shifted by the decoding', async t => {
  // A lone byte decodes to U+FFFD, three bytes: the events' text is longer than the chunk, so
  // byte ranges summed from it would cut the kept events two bytes late ("ta: [DONE]").
  const bad = (text: string) => Buffer.concat([Buffer.from(`data: {"t":"${text} `), Buffer.from([0xf5]), Buffer.from('"}\n\n')])
  // Named: its bytes differ from the other events' first ones.
  const usage = Buffer.from('event: u\ndata: {"t":"usage"}\n\n')
  for (const [name, parts] of [
    ['in the event dropped', [bad('usage'), Buffer.from(A), Buffer.from(C)]],
    ['in an event kept before the one dropped', [bad('x'), usage, Buffer.from(C)]],
    ['in an event kept between two dropped', [usage, bad('x'), usage, Buffer.from(C)]],
  ] as const) {
    const chunk = Buffer.concat(parts)
    const parser = new SseParser({})
    const parsed = parser.push(chunk)
    const out = new SseWriter().chunk(chunk, parsed, translator({ drop: 'usage' }), parser.whole)
    t.equal(out.toString(), parsed.filter(e => !e.data.includes('usage')).map(e => e.raw).join(''), name)
  }
})
