// A streaming client that stops reading is disconnected after the stream gap; its call settles
// and the upstream is aborted (issue 13 item 7). Real sockets: a raw client that pauses.
import t from 'tap'
import { connect } from 'node:net'
import type { ServerResponse } from 'node:http'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, msgEvent, chatChunk } from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { until } from '../helpers/until.ts'

/** 8 KiB of text per delta: 2048 estimated tokens each. */
const TEXT = 'x'.repeat(8192)
/** The fake upstream stops after this many deltas (64 MiB), far more than socket buffers hold. */
const MAX_DELTAS = 8192

/** Writes deltas as fast as the gateway reads them, until the gateway hangs up. */
async function flood (res: ServerResponse, head: string[], delta: string): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream' })
  for (const h of head) res.write(h)
  for (let i = 0; i < MAX_DELTAS && !res.destroyed; i++) {
    if (!res.write(delta)) await new Promise(resolve => { res.once('drain', resolve); res.once('close', resolve) })
  }
  if (!res.destroyed) res.end()
}

/**
 * Models whose output cap is above the whole flood: the stream is stopped by the client that does
 * not read, not by the backstop that ends a stream past its cap.
 */
const LONG_MODELS = [
  { id: 'msgvendor/long', max_output_tokens: 100_000_000, deployments: [{ provider: 'up-msg', model: 'up-model' }] },
  { id: 'vendor/long', max_output_tokens: 100_000_000, deployments: [{ provider: 'up-chat', model: 'up-model' }] },
]

const cases = [
  {
    name: 'messages route, messages upstream',
    path: '/v1/messages',
    model: 'msgvendor/long',
    head: [
      msgEvent('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'up-model', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } }),
      msgEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ],
    delta: msgEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: TEXT } }),
  },
  {
    name: 'chat route, chat upstream',
    path: '/v1/chat/completions',
    model: 'vendor/long',
    head: [chatChunk({ role: 'assistant', content: '' })],
    delta: chatChunk({ content: TEXT }),
  },
]

for (const c of cases) {
  t.test(`a client that stops reading is disconnected; the call settles and the upstream closes (${c.name})`, async t => {
    const up = await startFakeUpstream((_req, res) => flood(res, c.head, c.delta))
    const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
    await ledger.migrate()
    const app = await buildTestApp({
      ledger,
      doc: upstreamDoc(up.origin, up.origin, LONG_MODELS),
      pipeline: [{ plugin: 'timeout', config: { timeoutMs: 500 } }, AUTH_ENTRY, { plugin: 'balance', config: { enforce: false } }],
    })
    t.teardown(async () => { await app.close(); await up.close(); await ledger.close() })
    const base = new URL(await listen(app))

    const body = JSON.stringify({ model: c.model, max_tokens: 100_000_000, stream: true, messages: [{ role: 'user', content: 'Write forever.' }] })
    const sock = connect(Number(base.port), base.hostname)
    let received = ''
    let closed = false
    sock.setEncoding('utf8')
    sock.on('close', () => { closed = true })
    sock.on('error', () => {})
    sock.once('data', (s: string) => {
      received += s
      sock.pause() // stops reading: the kernel buffers fill, then the gateway's writes stop draining
      sock.on('data', (more: string) => { received += more })
    })
    sock.write(`POST ${c.path} HTTP/1.1\r\nHost: ${base.host}\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)

    t.ok(await until(() => received.startsWith('HTTP/1.1 200'), 5000), 'the stream started')
    t.ok(await until(() => app.calls.inFlight === 0, 20_000), 'the call is no longer in flight')
    t.ok(await until(() => up.openSockets === 0, 5000), 'the upstream connection was closed')
    let records = await ledger.listUsage({})
    t.ok(await until(async () => (records = await ledger.listUsage({})).length === 1, 5000), 'the call was settled: one usage record')
    t.equal(records[0]?.estimated, true, 'billed without final usage: estimated')
    t.ok((records[0]?.outputTokens ?? 0) >= TEXT.length / 4, 'billed at least for the delta the client got')
    t.ok(up.requests.length === 1 && (records[0]?.outputTokens ?? Infinity) < MAX_DELTAS * TEXT.length / 4, 'not for the whole upstream flood')

    sock.resume()
    t.ok(await until(() => closed, 10_000), 'the gateway hung up: the client, reading again, reaches the end of the connection')
    t.notMatch(received.slice(-200), /message_stop|\[DONE\]/, 'no proper end was sent')
  })
}
