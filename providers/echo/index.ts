/**
 * @module providers/echo – the built-in deterministic model: no network, exact wire formats.
 *
 * It speaks the protocol its config names, in-process (through the adapter's optional `invoke`
 * hook), so everything around it — translation, streaming, usage, billing — runs exactly as it
 * would against a real upstream. It echoes the last user text, counts images, reports usage with
 * a cached-input share, honours max_tokens, and calls a tool when the last user text says "/tool ..."
 * (arguments built from the tool's JSON Schema).
 */
import { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { randomBytes } from 'node:crypto'
import { defineProvider, type UpstreamResponse } from '../../index.ts'
import { EchoConfig } from './schema.ts'
import { readPrompt } from './prompt.ts'
import { answer } from './answer.ts'
import { chatJson, chatStream, messagesJson, messagesStream } from './render.ts'

const JSON_HEADERS = { 'content-type': 'application/json' }
const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' }

function errorResponse (protocol: 'chat' | 'messages', message: string): UpstreamResponse {
  const body = protocol === 'chat'
    ? { error: { message, type: 'invalid_request_error', param: null, code: null } }
    : { type: 'error', error: { type: 'invalid_request_error', message } }
  return { status: 400, headers: JSON_HEADERS, body: Readable.from([Buffer.from(JSON.stringify(body))]) }
}

async function * paced (chunks: Iterable<string>, delayMs: number, signal: AbortSignal): AsyncGenerator<Buffer> {
  let first = true
  for (const c of chunks) {
    if (!first && delayMs > 0) await sleep(delayMs, undefined, { signal })
    first = false
    yield Buffer.from(c)
  }
}

/**
 * @example
 * providers:
 *   - { name: echo, adapter: echo, config: { protocol: chat } }
 */
export default defineProvider({
  name: 'echo',
  configSchema: EchoConfig,
  create (config) {
    const protocol = config.protocol
    return {
      protocol,
      prepare (call) {
        return {
          origin: 'echo://local',
          path: protocol === 'chat' ? '/v1/chat/completions' : '/v1/messages',
          headers: { 'content-type': 'application/json' },
          body: call.bodyText ?? JSON.stringify(call.body),
        }
      },
      async invoke (req, signal) {
        if (config.latencyMs > 0) await sleep(config.latencyMs, undefined, { signal })
        let body: { model?: unknown, stream?: unknown, stream_options?: { include_usage?: unknown } | null }
        try {
          body = JSON.parse(typeof req.body === 'string' ? req.body : req.body.toString('utf8')) as typeof body
        } catch {
          return errorResponse(protocol, 'body is not valid JSON')
        }
        let prompt
        try {
          prompt = readPrompt(body, protocol)
        } catch (err) {
          return errorResponse(protocol, (err as Error).message)
        }
        if (prompt.badPart) return errorResponse(protocol, `unsupported content type "${prompt.badPart}"`)
        const seed = randomBytes(9).toString('base64url')
        const a = answer(prompt, seed)
        const model = String(body.model)
        const created = Math.floor(Date.now() / 1000)
        if (body.stream === true) {
          const chunks = protocol === 'chat'
            ? chatStream(a, `chatcmpl-echo${seed}`, model, created, body.stream_options?.include_usage === true)
            : messagesStream(a, `msg_echo${seed}`, model)
          return { status: 200, headers: SSE_HEADERS, body: Readable.from(paced(chunks, config.chunkDelayMs, signal)) }
        }
        const json = protocol === 'chat' ? chatJson(a, `chatcmpl-echo${seed}`, model, created) : messagesJson(a, `msg_echo${seed}`, model)
        return { status: 200, headers: JSON_HEADERS, body: Readable.from([Buffer.from(JSON.stringify(json))]) }
      },
    }
  },
})
