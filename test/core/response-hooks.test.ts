/**
 * Response hooks through a listening gateway: onResponse sees and changes non-streamed answers,
 * onStreamEvent each streamed event, parsed in the client's protocol, on both routes and every
 * upstream kind; a guardrail refuses an answer (error body) or ends a stream (error event); the
 * hooks run before onAnswered; a route without hooks keeps its fast paths.
 */
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { definePlugin } from '../../core/pipeline/plugin.ts'
import type { Outcome } from '../../core/types/context.ts'
import { AUTH_ENTRY, auth, buildTestApp, listen } from '../helpers/build-test-app.ts'

const empty = Type.Object({}, { additionalProperties: false })

/** Every string inside `v` with `word` replaced (a redaction that needs no protocol knowledge). */
function redact (v: unknown, word: string): unknown {
  if (typeof v === 'string') return v.split(word).join('*'.repeat(word.length))
  if (Array.isArray(v)) return v.map(x => redact(x, word))
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, redact(x, word)]))
  return v
}

interface Log { lines: string[] }

function redactor (log: Log) {
  return definePlugin({
    name: 'redactor',
    phase: 'admit',
    configSchema: Type.Object({ word: Type.String({ default: 'there', description: 'word to hide' }) }, { additionalProperties: false }),
    state: () => ({ events: 0 }),
    create: config => ({
      // Non-streamed: a replacement body.
      onResponse (_ctx, answer) {
        log.lines.push(`answer:${answer.protocol}`)
        return redact(answer.body, config.word)
      },
      // Streamed: changed in place.
      onStreamEvent (_ctx, event, state) {
        state.events++
        const finishing = (event.data?.choices as { finish_reason?: unknown }[] | undefined)?.some(c => typeof c.finish_reason === 'string')
        log.lines.push(finishing ? 'event:finish' : `event:${event.type}`)
        if (event.data) Object.assign(event.data, redact(event.data, config.word))
      },
      onAnswered (_ctx, _o, state) { log.lines.push(`answered:${state.events}`) },
    }),
  })
}

const kinds = [
  { route: '/v1/chat/completions', model: 'echo/echo-1', kind: 'chat→chat' },
  { route: '/v1/chat/completions', model: 'msgvendor/echo-1', kind: 'chat→messages' },
  { route: '/v1/messages', model: 'echo/echo-1', kind: 'messages→chat' },
  { route: '/v1/messages', model: 'msgvendor/echo-1', kind: 'messages→messages' },
]

async function call (base: string, route: string, model: string, stream: boolean, extra: Record<string, string> = {}): Promise<{ status: number, text: string }> {
  const res = await fetch(base + route, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...extra },
    body: JSON.stringify({ model, max_tokens: 50, stream, messages: [{ role: 'user', content: 'Hello there friend' }] }),
  })
  return { status: res.status, text: await res.text() }
}

for (const k of kinds) {
  for (const stream of [false, true]) {
    t.test(`redaction – ${k.kind} stream=${stream}`, async t => {
      const log: Log = { lines: [] }
      const app = await buildTestApp({ plugins: [redactor(log)], pipeline: [AUTH_ENTRY, { plugin: 'redactor' }] })
      t.teardown(() => app.close())
      const base = await listen(app)
      const { status, text } = await call(base, k.route, k.model, stream)
      t.equal(status, 200)
      t.notMatch(text, /there/, 'the word never reaches the client')
      t.match(text, /Echo: Hello \*\*\*\*\* friend|\*\*\*\*\*/, 'its redaction does')
      if (!stream) {
        t.same(log.lines.slice(0, 2), [`answer:${k.route === '/v1/messages' ? 'messages' : 'chat'}`, 'answered:0'], 'onResponse, then onAnswered')
        const body = JSON.parse(text)
        t.match(JSON.stringify(body), k.route === '/v1/messages' ? /"type":"message"/ : /"object":"chat.completion"/, 'still an answer of the client protocol')
      } else {
        t.match(text, k.route === '/v1/messages' ? /event: message_stop/ : /data: \[DONE\]/, 'the stream ends properly')
        // The event that finishes the answer (messages message_stop, chat the finish_reason chunk).
        const last = log.lines.indexOf(k.route === '/v1/messages' ? 'event:message_stop' : 'event:finish')
        const answered = log.lines.findIndex(l => l.startsWith('answered:'))
        t.ok(last >= 0 && answered > last, 'the finishing event went through the hooks before onAnswered')
        if (k.route === '/v1/messages') {
          t.ok(log.lines.includes('event:message_start') && log.lines.includes('event:content_block_delta'), 'messages events, by name')
          for (const block of text.split('\n\n').filter(Boolean)) t.match(block, /^event: \w+\ndata: \{/, 'messages framing')
        } else {
          t.ok(log.lines.includes('event:chunk'), 'chat chunks')
          for (const block of text.split('\n\n').filter(Boolean)) t.match(block, /^data: (\{|\[DONE\])/, 'chat framing')
        }
      }
    })
  }
}

const BLOCKED = { status: 400, code: 'output_blocked', type: 'invalid_request_error', message: { en: 'The answer was blocked by policy (%s).', 'zh-CN': '回答因策略被拦截（%s）。' } }

function guardrail (settled: Outcome[]) {
  return definePlugin({
    name: 'guardrail',
    phase: 'admit',
    configSchema: empty,
    errors: { OUTPUT_BLOCKED: BLOCKED },
    create: (_config, deps) => ({
      onResponse (_ctx, answer) {
        if (JSON.stringify(answer.body).includes('there')) throw deps.error('OUTPUT_BLOCKED', ['there'])
      },
      onStreamEvent (_ctx, event) {
        if (JSON.stringify(event.data ?? '').includes('there')) throw deps.error('OUTPUT_BLOCKED', ['there'])
      },
      onSettle (_ctx, outcome) { settled.push(outcome) },
    }),
  })
}

for (const k of kinds) {
  t.test(`guardrail – ${k.kind}: a refused answer becomes the plugin's error; a refused stream ends with it`, async t => {
    const settled: Outcome[] = []
    const app = await buildTestApp({ plugins: [guardrail(settled)], pipeline: [AUTH_ENTRY, { plugin: 'guardrail' }] })
    t.teardown(() => app.close())
    const base = await listen(app)
    const messages = k.route === '/v1/messages'
    const plain = await call(base, k.route, k.model, false, { 'x-locale': 'zh-CN' })
    t.equal(plain.status, 400)
    t.same(JSON.parse(plain.text), messages
      ? { type: 'error', error: { type: 'invalid_request_error', message: '回答因策略被拦截（there）。' } }
      : { error: { code: 'output_blocked', message: '回答因策略被拦截（there）。' } })
    const streamed = await call(base, k.route, k.model, true)
    t.equal(streamed.status, 200, 'the stream had started (or starts) before the refusal')
    t.notMatch(streamed.text, /there friend/, 'the refused event never went out')
    const blocks = streamed.text.split('\n\n').filter(Boolean)
    t.match(blocks.at(-1), messages
      ? /^event: error\ndata: \{"type":"error","error":\{"type":"invalid_request_error","message":"The answer was blocked by policy \(there\)\."\}\}$/
      : /^data: \{"error":\{"message":"The answer was blocked by policy \(there\)\.","type":"invalid_request_error","param":null,"code":"output_blocked"\}\}$/,
    'the last event is the error in the client protocol')
    t.notMatch(streamed.text, messages ? /message_stop/ : /\[DONE\]/, 'no normal end after it')
    while (settled.length < 2) await new Promise(resolve => setTimeout(resolve, 10))
    for (const o of settled) {
      t.equal(o.error?.code, 'OUTPUT_BLOCKED')
      t.ok(o.upstreamSucceeded && o.usage, 'the upstream answered: the call is billed')
    }
  })
}

t.test('a stream hook scoped to one route leaves the other untouched; a dropped event is not sent', async t => {
  const seen: string[] = []
  const dropper = definePlugin({
    name: 'dropper',
    phase: 'admit',
    configSchema: empty,
    create: () => ({
      onStreamEvent (ctx, event) {
        seen.push(ctx.route)
        return event.type === 'ping' ? null : undefined
      },
    }),
  })
  const app = await buildTestApp({ plugins: [dropper], pipeline: [AUTH_ENTRY, { plugin: 'dropper', routes: ['messages'] }] })
  t.teardown(() => app.close())
  t.same(app.gateway.pipeline.responders.chat, { answer: [], stream: [] }, 'no hook on chat: decided at start-up')
  const base = await listen(app)
  const chat = await call(base, '/v1/chat/completions', 'echo/echo-1', true)
  t.match(chat.text, /there/)
  t.same(seen, [], 'chat streams are not parsed')
  const msgs = await call(base, '/v1/messages', 'msgvendor/echo-1', true)
  t.match(msgs.text, /message_stop/)
  t.ok(seen.length > 3 && seen.every(r => r === 'messages'))
})
