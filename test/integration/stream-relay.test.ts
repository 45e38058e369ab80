// A same-protocol stream goes out as the upstream's bytes where its chunks are whole events the
// translator relays as they came, and rebuilt where it changes something (a usage chunk the
// client did not ask for is dropped): whatever the chunking, the client reads exactly the same
// stream, and the call is billed once. Real sockets, a fake upstream writing chosen chunks.
import t from 'tap'
import { request } from 'undici'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, chatChunk, chatUsageChunk, DONE, msgEvent } from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { until } from '../helpers/until.ts'

const content = [chatChunk({ role: 'assistant', content: '' }), chatChunk({ content: 'h\u00e9llo ' }), chatChunk({ content: 'w\u00f6rld \u{1F600}' }), chatChunk({}, 'stop')]
const usage = chatUsageChunk(12, 3)

/** Every way to cut `text` into writes: one write, per event, mid-event, mid-character, byte by byte for the head. */
function chunkings (events: string[]): Array<{ name: string, writes: Buffer[] }> {
  const all = Buffer.from(events.join(''))
  const euro = all.indexOf(Buffer.from('\u00e9')) + 1
  return [
    { name: 'one write', writes: [all] },
    { name: 'one event per write', writes: events.map(e => Buffer.from(e)) },
    { name: 'two events per write', writes: events.flatMap((e, i) => i % 2 === 0 ? [Buffer.from(e + (events[i + 1] ?? ''))] : []) },
    { name: 'cut mid-character and mid-event', writes: [all.subarray(0, euro), all.subarray(euro, euro + 50), all.subarray(euro + 50)] },
    { name: 'a comment and an id line between events', writes: [Buffer.from(`: keep-alive\n\n${events[0]}id: 7\n${events.slice(1).join('')}`)] },
  ]
}

for (const asked of [false, true]) {
  t.test(`chat → chat, usage ${asked ? 'asked for' : 'not asked for'}: the client reads the same stream whatever the chunking`, async t => {
    let writes: Buffer[] = []
    const up = await startFakeUpstream(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      for (const w of writes) { res.write(w); await new Promise(resolve => setTimeout(resolve, 2)) }
      res.end()
    })
    const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
    await ledger.migrate()
    const app = await buildTestApp({ ledger, doc: upstreamDoc(up.origin, up.origin), pipeline: [AUTH_ENTRY, { plugin: 'balance', config: { enforce: false } }] })
    t.teardown(async () => { await app.close(); await up.close(); await ledger.close() })
    const url = await listen(app)
    const events = [...content, usage, DONE]
    const expected = (asked ? events : [...content, DONE]).join('')
    let n = 0
    for (const c of chunkings(events)) {
      writes = c.writes
      const body = { model: 'vendor/chat-model', stream: true, messages: [{ role: 'user', content: 'hi' }], ...(asked ? { stream_options: { include_usage: true } } : {}) }
      const res = await request(`${url}/v1/chat/completions`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify(body) })
      const text = await res.body.text()
      t.equal(res.statusCode, 200, c.name)
      // Comments and id lines are not the client's: compare the data events.
      const strip = (s: string) => s.replace(/^: keep-alive\n\n/m, '').replace(/^id: 7\n/m, '')
      t.equal(strip(text), expected, `${c.name}: the same events, byte for byte`)
      n++
      t.ok(await until(async () => (await ledger.listUsage({})).length === n), `${c.name}: billed once`)
      t.match((await ledger.listUsage({}))[n - 1], { inputTokens: 12, outputTokens: 3, estimated: false })
    }
  })
}

t.test('messages → messages: the client reads the upstream\'s events whatever the chunking', async t => {
  const events = [
    msgEvent('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'up-model', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 9, output_tokens: 1 } } }),
    msgEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    msgEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'h\u00e9llo \u{1F600}' } }),
    msgEvent('content_block_stop', { index: 0 }),
    msgEvent('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 4 } }),
    msgEvent('message_stop', {}),
  ]
  let writes: Buffer[] = []
  const up = await startFakeUpstream(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    for (const w of writes) { res.write(w); await new Promise(resolve => setTimeout(resolve, 2)) }
    res.end()
  })
  const app = await buildTestApp({ doc: upstreamDoc(up.origin, up.origin) })
  t.teardown(async () => { await app.close(); await up.close() })
  const url = await listen(app)
  for (const c of chunkings(events)) {
    writes = c.writes
    const res = await request(`${url}/v1/messages`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ model: 'msgvendor/msg-model', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }) })
    const text = await res.body.text()
    t.equal(res.statusCode, 200, c.name)
    t.equal(text.replace(/^: keep-alive\n\n/m, '').replace(/^id: 7\n/m, ''), events.join(''), `${c.name}: the same events, byte for byte`)
  }
})
