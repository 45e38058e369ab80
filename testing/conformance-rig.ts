/**
 * @module testing/conformance-rig – what the conformance suite runs an adapter in: a real gateway
 * (in-process, `app.inject`) whose one model is deployed on the adapter, and a loopback fake upstream
 * answering like a vendor of the adapter's protocol (chat completions, messages or the Responses
 * API), JSON or SSE as asked, with the vendor's usage — or, through the adapter's own wire
 * (`ConformanceWire`), in the vendor's format; and how the suite reads the client's answers.
 */
import type { ServerResponse } from 'node:http'
import pino from 'pino'
import type { ProviderAdapter } from '../core/dispatch/provider.ts'
import type { ClientProtocol } from '../core/types/model.ts'
import type { Usage } from '../core/types/usage.ts'
import type { GatewayApp } from '../core/http/app.ts'
import type { SseEvent } from '../core/dispatch/provider.ts'
import { SseParser } from '../core/dispatch/sse.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import { startFakeUpstream, json, sse, chatChunk, msgEvent, DONE, type FakeUpstream, type Recorded, type SseOptions } from './fake-upstream.ts'
import { outcomeSpy } from './outcome-spy.ts'
import { GOLDEN_PARAMS, goldenBody, frameUpstream, type SseFraming } from './golden.ts'
import { responsesAnswerBody, responsesUpstreamEvents } from './conformance-responses.ts'

export const MODEL = 'conformance/model'
export const UPSTREAM_MODEL = 'up-conformance'
/** The counts the fake upstream reports; what the gateway must hand to billing, whatever the protocol. */
export const USAGE: Usage = { inputTokens: 20, cachedInputTokens: 4, cacheWriteTokens: 0, outputTokens: 7 }
export const PIECES = ['Hel', 'lo']
/** A prompt holding this makes the fake upstream cut its stream after the first events. */
export const CUT = 'conformance-cut-the-stream'
/**
 * How many events a cut stream sends, per protocol: its first output (text) and one event more,
 * since the write just before a cut may not arrive. The stream showed output, so it has reached the
 * client: the gateway keeps a stream's opening events back until its first output, and a stream
 * that fails before any fails over instead.
 */
const CUT_AFTER: Readonly<Record<ClientProtocol, number>> = { chat: 3, messages: 4, responses: 6 }
/** Parameters the suite's model lists besides the golden ones: what the Responses API cases use. */
const EXTRA_PARAMS = ['response_format', 'parallel_tool_calls']

/** The client routes and the body each starts from (a case's `extra` is merged over it). */
export const ROUTES: Readonly<Record<ClientProtocol, { url: string, body (extra?: Record<string, unknown>): Record<string, unknown> }>> = {
  chat: { url: '/v1/chat/completions', body: (extra = {}) => goldenBody('chat', MODEL, extra) },
  messages: { url: '/v1/messages', body: (extra = {}) => goldenBody('messages', MODEL, extra) },
  responses: { url: '/v1/responses', body: (extra = {}) => ({ model: MODEL, input: 'hi', ...extra }) },
}
export const CLIENTS: readonly ClientProtocol[] = ['chat', 'messages', 'responses']

/** The members of a JSON object, or none (what a fake upstream or a client receives is unchecked). */
export function fields (v: unknown): Readonly<Record<string, unknown>> {
  return typeof v === 'object' && v !== null ? v as Record<string, unknown> : {}
}

/**
 * A reply of the fake upstream, in the adapter's declared protocol: a JSON answer (a string body is
 * sent as text/html), or a stream as SSE event texts, one per event. The rig writes it as is, or
 * through the adapter's own wire (`ConformanceWire`) when the vendor speaks something else.
 */
export type ProtocolReply =
  | { status: number, body: unknown }
  | { events: readonly string[], pace?: SseOptions, framing?: SseFraming }

/** Answers one request the upstream received (`req.body` in the adapter's protocol, decoded by the wire when there is one). */
export type ProtocolHandler = (req: Recorded) => ProtocolReply

/** What a vendor's wire sends back for one protocol-level reply: a status, headers and the bytes. */
export interface WireReply { status?: number, headers: Record<string, string>, body: string | Uint8Array }

/**
 * An adapter's own wire, for a vendor that does not speak chat completions, messages or the
 * Responses API as they are (binary event streams, other JSON shapes, signed requests): the suite
 * keeps writing its golden answers and streams in the adapter's declared `protocol`, and the wire
 * turns them into the vendor's bytes, and the requests the vendor received back into that protocol,
 * so the same golden cases check the adapter.
 */
export interface ConformanceWire {
  /**
   * A request as the fake upstream received it (raw path, headers, body text) → its body in the
   * adapter's protocol, as the golden cases are written: with `model` (the upstream model name,
   * wherever the vendor carries it) and `stream: true` when a stream was asked for. Throw to
   * refuse it (a request the vendor would refuse, a bad signature): the case fails with the message.
   */
  decodeRequest (req: Recorded): Record<string, unknown> | Promise<Record<string, unknown>>
  /** A JSON answer in the adapter's protocol → the vendor's answer. */
  encodeAnswer (body: Record<string, unknown>): WireReply
  /**
   * A stream in the adapter's protocol (its events, parsed) → the vendor's stream: its response
   * headers, and for each event the bytes it becomes (none, one frame, several), so pacing and a
   * cut after the n-th event keep their meaning.
   */
  encodeStream (events: readonly SseEvent[]): { headers: Record<string, string>, chunks: Uint8Array[][] }
  /** An error answer (status, the protocol's error body) → the vendor's (default: sent as given). */
  encodeError? (status: number, body: unknown): WireReply
}

/** A fake upstream answering like a vendor of `protocol`: JSON or SSE as asked, with the vendor's usage. */
export function answerLike (protocol: ClientProtocol, usageOf: (u: Usage) => Record<string, unknown>): ProtocolHandler {
  return (req: Recorded): ProtocolReply => {
    const stream = fields(req.body).stream === true
    const cutAfter = req.text.includes(CUT) ? CUT_AFTER[protocol] : undefined
    const pace = { cutAfter, delayMs: cutAfter ? 20 : 0 }
    const text = PIECES.join('')
    if (protocol === 'responses') {
      const output = [{ type: 'message' as const, text }]
      if (!stream) return { status: 200, body: responsesAnswerBody(output, 'completed', usageOf(USAGE), UPSTREAM_MODEL) }
      return { events: responsesUpstreamEvents(output, 'completed', usageOf(USAGE), UPSTREAM_MODEL), pace }
    }
    if (protocol === 'chat') {
      if (!stream) {
        return {
          status: 200,
          body: {
            id: 'chatcmpl-c1', object: 'chat.completion', created: 1767225600, model: UPSTREAM_MODEL,
            choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: usageOf(USAGE),
          },
        }
      }
      return {
        events: [
          chatChunk({ role: 'assistant', content: '' }), ...PIECES.map(p => chatChunk({ content: p })), chatChunk({}, 'stop'),
          `data: ${JSON.stringify({ id: 'chatcmpl-c1', object: 'chat.completion.chunk', created: 1767225600, model: UPSTREAM_MODEL, choices: [], usage: usageOf(USAGE) })}\n\n`,
          DONE,
        ],
        pace,
      }
    }
    if (!stream) {
      return {
        status: 200,
        body: {
          id: 'msg_c1', type: 'message', role: 'assistant', model: UPSTREAM_MODEL, content: [{ type: 'text', text }],
          stop_reason: 'end_turn', stop_sequence: null, usage: usageOf(USAGE),
        },
      }
    }
    return {
      events: [
        msgEvent('message_start', { message: { id: 'msg_c1', type: 'message', role: 'assistant', model: UPSTREAM_MODEL, content: [], stop_reason: null, stop_sequence: null, usage: usageOf({ ...USAGE,
          outputTokens: 1 }) } }),
        msgEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        ...PIECES.map(p => msgEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: p } })),
        msgEvent('content_block_stop', { index: 0 }),
        msgEvent('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: usageOf(USAGE) }),
        msgEvent('message_stop', {}),
      ],
      pace,
    }
  }
}

/** Writes per-event byte chunks with the pacing and faults of `sse` (a cut or a stall after the n-th event). */
async function writeEvents (res: ServerResponse, headers: Record<string, string>, perEvent: readonly Uint8Array[][], pace: SseOptions = {}): Promise<void> {
  res.writeHead(200, headers)
  for (let i = 0; i < perEvent.length; i++) {
    if (pace.cutAfter !== undefined && i >= pace.cutAfter) {
      // The bytes written so far go out first (a response's write is corked until the next tick).
      await new Promise<void>(resolve => setImmediate(resolve))
      res.socket?.destroy()
      return
    }
    if (pace.stallAfter !== undefined && i >= pace.stallAfter) return
    if (i > 0 && pace.delayMs) await sleep(pace.delayMs)
    if (res.destroyed) return
    for (const c of perEvent[i]) res.write(c)
  }
  res.end()
}

/** Writes a protocol-level reply, as is or through the adapter's wire. */
async function writeReply (res: ServerResponse, reply: ProtocolReply, wire: ConformanceWire | undefined): Promise<void> {
  if ('events' in reply) {
    if (wire === undefined) return sse(res, frameUpstream(reply.events, reply.framing), reply.pace)
    const parsed = reply.events.map(e => {
      const p = new SseParser()
      const evs = [...p.push(Buffer.from(e)), ...p.end()]
      if (evs.length !== 1) throw new Error(`not one SSE event: ${e}`)
      return evs[0]
    })
    const { headers, chunks } = wire.encodeStream(parsed)
    // Bytes cut into fixed-size reads (a frame split anywhere) where the case asks for it.
    const split = reply.framing?.splitBytes
    if (split !== undefined) {
      const all = Buffer.concat(chunks.flat())
      const pieces: Uint8Array[][] = []
      for (let i = 0; i < all.length; i += split) pieces.push([all.subarray(i, i + split)])
      return writeEvents(res, headers, pieces, reply.pace)
    }
    return writeEvents(res, headers, chunks, reply.pace)
  }
  const { status, body } = reply
  if (wire === undefined || typeof body === 'string') return json(res, status, body)
  const out = status < 300
    ? wire.encodeAnswer(fields(body) as Record<string, unknown>)
    : wire.encodeError?.(status, body) ?? { status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }
  res.writeHead(out.status ?? status, out.headers)
  res.end(out.body)
}

/** A request the upstream received, as the suite reads it: `body` in the adapter's protocol; `refused` when the wire refused it. */
export interface SeenRequest extends Recorded { refused?: string }

export interface Rig {
  app: GatewayApp
  up: FakeUpstream
  /** Every request the upstream received, its body in the adapter's protocol (decoded by the wire when there is one). */
  requests: SeenRequest[]
  /** Replaces how the upstream answers. */
  handle (fn: ProtocolHandler): void
  spy: ReturnType<typeof outcomeSpy>
  /** What the adapter's upstream speaks. */
  protocol: ClientProtocol
  close (): Promise<void>
}

/** A gateway with the adapter as its one provider, in front of a fake upstream; it answers 500 until given a handler. */
export async function rig (adapter: ProviderAdapter, config: (baseUrl: string) => Record<string, unknown>, wire?: ConformanceWire, deploymentModel = UPSTREAM_MODEL): Promise<Rig> {
  const { buildConfig } = await import('../core/config/config.ts')
  const { buildApp } = await import('../core/http/app.ts')
  const { openLedger } = await import('../core/ledger/index.ts')
  const { builtinPlugins } = await import('../plugins/index.ts')
  const { builtinProviders, translators } = await import('../providers/index.ts')
  // A built-in adapter is already registered; a third-party one joins the registry.
  const providers = builtinProviders.includes(adapter) ? builtinProviders : [...builtinProviders, adapter]
  const requests: SeenRequest[] = []
  let handler: ProtocolHandler = () => ({ status: 500, body: { error: { message: 'no handler' } } })
  const up = await startFakeUpstream(async (raw, res) => {
    const seen: SeenRequest = { ...raw }
    requests.push(seen)
    if (wire !== undefined) {
      try {
        seen.body = await wire.decodeRequest(raw)
      } catch (err) {
        seen.refused = err instanceof Error ? err.message : String(err)
        return writeReply(res, { status: 400, body: { error: { message: `the fake upstream refused the request: ${seen.refused}` } } }, wire)
      }
    }
    return writeReply(res, handler(seen), wire)
  })
  const spy = outcomeSpy()
  const doc = {
    // The suite provokes upstream failures on purpose: the circuit must not open between cases.
    providers: [{ name: 'conformance', adapter: adapter.name, config: config(up.origin), circuit: { failureThreshold: 1_000_000 } }],
    models: [{
      id: MODEL, input_modalities: ['text', 'image', 'file'], price: { input: 1, cachedInput: 0.5, output: 2 },
      supported_parameters: [...GOLDEN_PARAMS, ...EXTRA_PARAMS],
      deployments: [{ provider: 'conformance', model: deploymentModel }],
    }],
    pipeline: [{ plugin: 'outcome-spy' }],
    logging: { level: 'silent' },
  }
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  let app: GatewayApp
  try {
    const cfg = buildConfig(doc, 'conformance config', process.cwd(), {})
    cfg.stores.kv.backend = 'memory'
    await ledger.migrate()
    app = await buildApp(cfg, { ledger, providers, plugins: [...builtinPlugins, spy.plugin], translators, logger: pino({ level: 'silent' }) })
  } catch (err) {
    await ledger.close()
    await up.close()
    throw err
  }
  const protocol = app.gateway.providers.get('conformance')!.protocol
  return { app, up, requests, handle (fn) { handler = fn }, spy, protocol, async close () { await app.close(); await ledger.close(); await up.close() } }
}

/** The events of an SSE text. */
export function events (text: string): SseEvent[] {
  const p = new SseParser()
  return [...p.push(Buffer.from(text)), ...p.end()]
}

/** Text of a client-protocol answer, JSON or SSE. */
export function answerText (route: ClientProtocol, payload: string, streamed: boolean): string {
  if (!streamed) {
    const b = fields(JSON.parse(payload))
    if (route === 'chat') return String(fields(fields((b.choices as unknown[])[0]).message).content)
    const blocks = (route === 'messages' ? b.content : (b.output as unknown[]).flatMap(item => fields(item).content ?? [])) as unknown[]
    return blocks.map(c => { const t = fields(c).text; return typeof t === 'string' ? t : '' }).join('')
  }
  let text = ''
  for (const ev of events(payload)) {
    if (ev.data === '[DONE]') continue
    const d = fields(JSON.parse(ev.data))
    if (route === 'chat') text += String(fields(fields((d.choices as unknown[] | undefined)?.[0]).delta).content ?? '')
    else if (route === 'messages' && d.type === 'content_block_delta') text += String(fields(d.delta).text ?? '')
    else if (route === 'responses' && d.type === 'response.output_text.delta') text += String(d.delta)
  }
  return text
}
