// Stream hooks on /v1/responses: each Responses event reaches them parsed, named by its `event:`
// line, and goes back out with that line (the SDKs need it).
import t from 'tap'
import { StreamHookSink } from '../../core/call/response-hooks.ts'
import type { ClientStreamEvent } from '../../core/pipeline/plugin.ts'
import { sseEvent } from '../../core/dispatch/sse.ts'

t.test('a Responses stream through a rewriting hook', async t => {
  const seen: ClientStreamEvent[] = []
  const rw = new StreamHookSink('responses', async ev => {
    seen.push(ev)
    if (ev.type === 'response.in_progress') return null
    if (ev.type === 'response.output_text.delta') return { ...ev, data: { ...ev.data, delta: String(ev.data?.delta).toUpperCase() } }
    return ev
  })
  // As a translator emits them: built events, and an upstream event relayed as it came (parsed once for the hooks).
  rw.event('response.created', { type: 'response.created', sequence_number: 0, response: { id: 'resp_1' } })
  rw.event('response.in_progress', { type: 'response.in_progress', sequence_number: 1, response: { id: 'resp_1' } })
  const data = JSON.stringify({ type: 'response.output_text.delta', sequence_number: 2, delta: 'hi' })
  rw.relay({ event: 'response.output_text.delta', data, raw: `event: response.output_text.delta\ndata: ${data}\n\n` })
  const out = await rw.take()
  t.same(seen.map(e => [e.protocol, e.type]), [['responses', 'response.created'], ['responses', 'response.in_progress'], ['responses', 'response.output_text.delta']])
  t.equal(out, sseEvent('response.created', { type: 'response.created', sequence_number: 0, response: { id: 'resp_1' } }) +
    sseEvent('response.output_text.delta', { type: 'response.output_text.delta', sequence_number: 2, delta: 'HI' }))
})
