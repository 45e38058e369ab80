import t from 'tap'
import { SseParser, SseEventTooLarge } from '../../core/dispatch/sse.ts'
import type { SseEvent } from '../../core/dispatch/provider.ts'

/** Feeds `text` in pieces of `size` bytes (a UTF-8 character may be split) and collects every event. */
function parse (text: string, size: number, opts: { maxEventBytes?: number } = {}): SseEvent[] {
  const p = new SseParser(opts)
  const buf = Buffer.from(text)
  const out: SseEvent[] = []
  for (let i = 0; i < buf.length; i += size) out.push(...p.push(buf.subarray(i, i + size)))
  out.push(...p.end())
  return out
}

const STREAM = [
  ': keepalive\n\n',
  'event: message_start\r\ndata: {"a":"é€😀"}\r\n\r\n',
  'data:{"no":"space"}\n\n',
  'event: multi\rdata: one\rdata: two\r\r',
  'id: 7\nretry: 10\ndata: [DONE]\n\n',
  'data: unterminated',
].join('')

t.test('SseParser – same events and exact raw text whatever the chunking', async t => {
  const whole = parse(STREAM, STREAM.length * 4)
  t.same(whole.map(e => [e.event, e.data]), [
    ['message_start', '{"a":"é€😀"}'],
    [undefined, '{"no":"space"}'],
    ['multi', 'one\ntwo'],
    [undefined, '[DONE]'],
    [undefined, 'unterminated'],
  ])
  t.equal(whole[0].raw, ': keepalive\n\nevent: message_start\r\ndata: {"a":"é€😀"}\r\n\r\n'.slice(': keepalive\n\n'.length), 'raw keeps CRLF')
  t.equal(whole[2].raw, 'event: multi\rdata: one\rdata: two\r\r')
  for (const size of [1, 2, 3, 5, 7, 64]) {
    t.same(parse(STREAM, size), whole, `chunks of ${size} bytes`)
  }
})

t.test('SseParser – a CRLF split between two chunks is one line end', async t => {
  const p = new SseParser()
  t.same(p.push('data: a\r'), [])
  t.same(p.push('\n\r'), [])
  const evs = p.push('\ndata: b\n\n')
  t.same(evs.map(e => [e.data, e.raw]), [['a', 'data: a\r\n\r\n'], ['b', 'data: b\n\n']])
})

t.test('SseParser – a long line over many chunks is joined once', async t => {
  const line = 'x'.repeat(200_000)
  const evs = parse(`data: ${line}\n\ndata: y\n\n`, 1000)
  t.equal(evs.length, 2)
  t.equal(evs[0].data, line)
  t.equal(evs[1].data, 'y')
})

t.test('SseParser – maxEventBytes', async t => {
  t.test('an endless line fails once it passes the cap, before it ends', async t => {
    const p = new SseParser({ maxEventBytes: 1024 })
    p.push('data: ')
    t.throws(() => { for (let i = 0; i < 10; i++) p.push('y'.repeat(200)) }, SseEventTooLarge)
  })
  t.test('an event of many lines without a blank line fails too', async t => {
    const p = new SseParser({ maxEventBytes: 1024 })
    t.throws(() => { for (let i = 0; i < 100; i++) p.push('data: abcdefghij\n') }, SseEventTooLarge)
  })
  t.test('an oversize event that arrives in one chunk fails', async t => {
    t.throws(() => new SseParser({ maxEventBytes: 1024 }).push(`data: ${'z'.repeat(2000)}\n\n`), SseEventTooLarge)
  })
  t.test('multi-byte characters count as bytes', async t => {
    t.throws(() => new SseParser({ maxEventBytes: 1024 }).push(`data: ${'€'.repeat(400)}\n\n`), SseEventTooLarge, '400 characters, 1200 bytes')
  })
  t.test('many events, each under the cap, never fail', async t => {
    const ev = `data: ${'w'.repeat(500)}\n\n`
    const evs = parse(ev.repeat(100), 300, { maxEventBytes: 1024 })
    t.equal(evs.length, 100)
  })
})

t.test('SseParser – whole: a chunk that is exactly a run of complete events (its raw texts joined are the chunk)', async t => {
  const p = new SseParser()
  const push = (x: string | Buffer) => { const evs = p.push(x); return { whole: p.whole, raw: evs.map(e => e.raw).join('') } }
  t.same(push('data: a\n\n'), { whole: true, raw: 'data: a\n\n' })
  t.same(push(Buffer.from('event: x\ndata: b\n\ndata: c\r\n\r\n')), { whole: true, raw: 'event: x\ndata: b\n\ndata: c\r\n\r\n' })
  t.equal(push(': ping\n\ndata: d\n\n').whole, false, 'a comment is in no event')
  t.equal(push('data: e\n\ndata: f').whole, false, 'an event left open')
  t.equal(push('\n\n').whole, false, 'the end of an event begun earlier')
  t.equal(push('data: g\n\n').whole, true, 'whole again once nothing is held')
  const bytes = Buffer.from('data: é\n\n')
  const cut = bytes.indexOf(0xc3) + 1
  t.equal(push(bytes.subarray(0, cut)).whole, false, 'a character split by the chunk')
  t.same(push(bytes.subarray(cut)), { whole: false, raw: 'data: é\n\n' }, 'its rest: the event is complete but began earlier')
  t.equal(push('data: h\r\r').whole, false, 'a chunk ending in CR may continue with LF')
  t.equal(push('\ndata: i\n\n').whole, false)
  t.equal(push('data: j\n\n').whole, true)
  t.equal(push('').whole, false, 'an empty chunk is no run of events')
  t.same(p.end(), [])
})
