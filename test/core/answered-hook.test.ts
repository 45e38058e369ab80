/**
 * onAnswered: runs once an upstream answered, with the call's usage, and finishes before the
 * client has its whole answer (non-streamed body, or the stream's end) on both routes; onSettle
 * still runs after it, once.
 */
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { definePlugin } from '../../core/pipeline/plugin.ts'
import { AUTH_ENTRY, auth, buildTestApp, listen } from '../helpers/build-test-app.ts'

interface Seen { answered: number, answeredDone: boolean, settled: number, usage?: unknown, settledAfterAnswered: boolean }

function slowAnswered (seen: Seen) {
  return definePlugin({
    name: 'slow-answered',
    phase: 'admit',
    configSchema: Type.Object({}),
    create: () => ({
      onRequest () {},
      async onAnswered (_ctx, outcome) {
        seen.answered++
        seen.usage = outcome.usage
        // Long enough that a client answered before this finished would see answeredDone false.
        await new Promise(resolve => setTimeout(resolve, 150))
        seen.answeredDone = true
      },
      onSettle () {
        seen.settled++
        seen.settledAfterAnswered = seen.answeredDone
      },
    }),
  })
}

const cases = [
  { route: '/v1/chat/completions', model: 'echo/echo-1', stream: false },
  { route: '/v1/chat/completions', model: 'echo/echo-1', stream: true },
  { route: '/v1/chat/completions', model: 'msgvendor/echo-1', stream: true },
  { route: '/v1/messages', model: 'msgvendor/echo-1', stream: false },
  { route: '/v1/messages', model: 'msgvendor/echo-1', stream: true },
  { route: '/v1/messages', model: 'echo/echo-1', stream: true },
]

for (const c of cases) {
  t.test(`${c.route} ${c.model} stream=${c.stream}: onAnswered finishes before the answer's end`, async t => {
    const seen: Seen = { answered: 0, answeredDone: false, settled: 0, settledAfterAnswered: false }
    const app = await buildTestApp({ plugins: [slowAnswered(seen)], pipeline: [AUTH_ENTRY, { plugin: 'slow-answered' }] })
    t.teardown(() => app.close())
    const base = await listen(app)
    const res = await fetch(base + c.route, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: c.model, max_tokens: 50, stream: c.stream, messages: [{ role: 'user', content: 'Hello there' }] }),
    })
    t.equal(res.status, 200)
    const text = await res.text()
    t.ok(seen.answeredDone, 'the whole answer arrived only after onAnswered had finished')
    t.match(text, c.stream ? (c.route === '/v1/messages' ? /event: message_stop/ : /data: \[DONE\]/) : /Echo: Hello there/, 'the answer is complete')
    t.equal(seen.answered, 1, 'onAnswered ran once')
    t.match(seen.usage, { inputTokens: Number, outputTokens: Number }, 'it saw the usage')
    while (seen.settled === 0) await new Promise(resolve => setTimeout(resolve, 10))
    t.equal(seen.settled, 1, 'onSettle ran once')
    t.ok(seen.settledAfterAnswered, 'onSettle ran after onAnswered')
  })
}

t.test('no upstream answer (the translator refuses the body after admit): onAnswered does not run, onSettle does', async t => {
  const seen: Seen = { answered: 0, answeredDone: false, settled: 0, settledAfterAnswered: false }
  const app = await buildTestApp({ plugins: [slowAnswered(seen)], pipeline: [AUTH_ENTRY, { plugin: 'slow-answered' }] })
  t.teardown(() => app.close())
  const base = await listen(app)
  const res = await fetch(base + '/v1/chat/completions', {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'msgvendor/echo-1', n: 2, messages: [{ role: 'user', content: 'x' }] }),
  })
  t.equal(res.status, 400)
  await res.text()
  while (seen.settled === 0) await new Promise(resolve => setTimeout(resolve, 10))
  t.equal(seen.answered, 0)
  t.equal(seen.settled, 1)
})
