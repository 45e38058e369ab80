/**
 * @module testing/fake-upstream – a loopback HTTP server that speaks any of the wire protocols
 * (chat completions, messages, the Responses API), driven per test: answer JSON or SSE, fail,
 * stall, cut a stream. It records every request.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

export interface Recorded {
  method: string
  path: string
  headers: IncomingMessage['headers']
  /**
   * The body parsed as JSON (its text when it is not JSON). Unchecked: narrow it, or read it as
   * the wire type the test expects (e.g. `req.body as ChatCompletionCreateParams`, a type-only
   * import from `openai`), then assert.
   */
  body: unknown
  /** The body's text exactly as received. */
  text: string
}

export type Handler = (req: Recorded, res: ServerResponse) => void | Promise<void>

export interface FakeUpstream {
  /** `http://127.0.0.1:<port>` */
  origin: string
  requests: Recorded[]
  /** Sockets open now. */
  readonly openSockets: number
  /** Sockets the server has seen close. */
  closedSockets: number
  /** Replaces the handler (default: 500). */
  handle (fn: Handler): void
  close (): Promise<void>
}

export async function startFakeUpstream (handler?: Handler): Promise<FakeUpstream> {
  let h: Handler = handler ?? ((_req, res) => json(res, 500, { error: { message: 'no handler' } }))
  const sockets = new Set<Socket>()
  const up: FakeUpstream = {
    origin: '',
    requests: [],
    get openSockets () { return sockets.size },
    closedSockets: 0,
    handle (fn) { h = fn },
    async close () {
      for (const s of sockets) s.destroy()
      await new Promise<void>(resolve => server.close(() => resolve()))
    },
  }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      let body: unknown = text
      try { body = JSON.parse(text) } catch { /* keep text */ }
      const rec: Recorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, text }
      up.requests.push(rec)
      Promise.resolve(h(rec, res)).catch(() => res.destroy())
    })
  })
  server.on('connection', s => {
    sockets.add(s)
    s.on('close', () => { sockets.delete(s); up.closedSockets++ })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const addr = server.address() as { port: number }
  up.origin = `http://127.0.0.1:${addr.port}`
  return up
}

export function json (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/html' : 'application/json', ...headers })
  res.end(text)
}

export interface SseOptions {
  delayMs?: number
  /** Destroy the socket after this many events (a broken stream). */
  cutAfter?: number
  /** Stop writing after this many events and keep the socket open (a stalled stream). */
  stallAfter?: number
}

/** Writes raw SSE event texts (each already framed) with optional pacing and faults. */
export async function sse (res: ServerResponse, events: ReadonlyArray<string | Uint8Array>, opts: SseOptions = {}): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  for (let i = 0; i < events.length; i++) {
    if (opts.cutAfter !== undefined && i >= opts.cutAfter) { res.socket?.destroy(); return }
    if (opts.stallAfter !== undefined && i >= opts.stallAfter) return
    if (i > 0 && opts.delayMs) await sleep(opts.delayMs)
    if (res.destroyed) return
    res.write(events[i])
  }
  res.end()
}

// ── a messages upstream that checks requests as Anthropic's API does ────────────────────────

/** anthropic-version values Anthropic's API takes. */
export const MESSAGES_API_VERSIONS: readonly string[] = ['2023-06-01', '2026-10-21']

/** The beta under which a 2023-06-01 request may hold a `system` turn inside `messages`. */
export const MID_CONVERSATION_SYSTEM_BETA = 'mid-conversation-system-2026-04-07'

/** anthropic-beta values Anthropic's API knows (a fake refuses others, as the API does). */
export const KNOWN_BETAS: readonly string[] = [
  'claude-code-20250219', 'interleaved-thinking-2025-05-14', 'fine-grained-tool-streaming-2025-05-14',
  'token-efficient-tools-2025-02-19', 'context-management-2025-06-27', 'structured-outputs-2025-09-17',
  'tool-examples-2025-10-29', MID_CONVERSATION_SYSTEM_BETA, 'per-turn-control-2026-07-01',
  'mid-conversation-tool-changes-2026-07-01', 'thinking-token-count-2026-05-13', 'effort-2025-11-24',
  'advanced-tool-use-2025-11-20', 'context-1m-2025-08-07', 'extended-cache-ttl-2025-04-11',
  'prompt-caching-2024-07-31', 'output-128k-2025-02-19', 'computer-use-2025-01-24', 'code-execution-2025-08-25',
  'files-api-2025-04-14', 'mcp-client-2025-11-20', 'skills-2025-10-02', 'oauth-2025-04-20', 'web-fetch-2025-09-10',
]

export interface MessagesCheckOptions {
  /** Versions accepted (default MESSAGES_API_VERSIONS). */
  versions?: readonly string[]
  /** Betas accepted (default KNOWN_BETAS); `'*'` accepts any. */
  betas?: readonly string[] | '*'
}

/** A refusal as Anthropic's API words it: status and error body. */
export interface MessagesRefusal { status: number, body: { type: 'error', error: { type: string, message: string } } }

const refusal = (message: string, status = 400, type = 'invalid_request_error'): MessagesRefusal => ({ status, body: { type: 'error', error: { type, message } } })

/**
 * Checks a request to `/v1/messages` (or `/v1/messages/count_tokens`) the way Anthropic's API
 * does: a key, a known `anthropic-version`, known betas, `model`, `max_tokens` (not on
 * count_tokens), a non-empty message list whose roles are `user` or `assistant`, or `system` on
 * 2026-10-21 or under the mid-conversation-system beta, and `defer_loading` on a tool only under
 * the advanced-tool-use beta. Undefined when the request passes.
 */
export function checkMessagesRequest (req: Recorded, opts: MessagesCheckOptions = {}): MessagesRefusal | undefined {
  const h = req.headers
  if (h['x-api-key'] === undefined && h.authorization === undefined) return refusal('x-api-key header is required', 401, 'authentication_error')
  const version = h['anthropic-version']
  if (typeof version !== 'string') return refusal('anthropic-version: header is required')
  if (!(opts.versions ?? MESSAGES_API_VERSIONS).includes(version)) return refusal(`anthropic-version: invalid version "${version}"`)
  const betaHeader = h['anthropic-beta']
  const betas = (Array.isArray(betaHeader) ? betaHeader.join(',') : betaHeader ?? '').split(',').map(b => b.trim()).filter(Boolean)
  const known = opts.betas ?? KNOWN_BETAS
  const unknown = known === '*' ? [] : betas.filter(b => !known.includes(b))
  if (unknown.length > 0) return refusal(`Unexpected value(s) \`${unknown.join('`, `')}\` for the \`anthropic-beta\` header. Please consult our documentation at docs.claude.com or ` +
    'try again without the header.')
  const body = req.body
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return refusal('The request body is not valid JSON.')
  const b = body as Record<string, unknown>
  if (typeof b.model !== 'string' || b.model === '') return refusal('model: Field required')
  if (!req.path.split('?')[0].endsWith('/count_tokens') && !Number.isInteger(b.max_tokens)) return refusal('max_tokens: Field required')
  if (!Array.isArray(b.messages)) return refusal('messages: Field required')
  if (b.messages.length === 0) return refusal('messages: at least one message is required')
  const systemAllowed = version >= '2026-10-21' || betas.includes(MID_CONVERSATION_SYSTEM_BETA)
  for (const [i, m] of b.messages.entries()) {
    const role = typeof m === 'object' && m !== null ? (m as { role?: unknown }).role : undefined
    if (role === 'user' || role === 'assistant' || (role === 'system' && systemAllowed)) continue
    return refusal(`messages.${i}.role: Input should be ${systemAllowed ? "'user', 'assistant' or 'system'" : "'user' or 'assistant'"}`)
  }
  // A deferred tool (tool search) is a field of the advanced-tool-use beta.
  const deferred = Array.isArray(b.tools) ? b.tools.findIndex(x => typeof x === 'object' && x !== null && 'defer_loading' in x) : -1
  if (deferred >= 0 && !betas.includes('advanced-tool-use-2025-11-20')) return refusal(`tools.${deferred}.custom.defer_loading: Extra inputs are not permitted`)
  return undefined
}

// ── builders for the wire formats ───────────────────────────────────────────────────────────

export const chatChunk = (delta: unknown, finish: string | null = null, extra: Record<string, unknown> = {}): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-up1', object: 'chat.completion.chunk', created: 1767225600, model: 'up-model', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`

export const chatUsageChunk = (prompt: number, completion: number, cached = 0): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-up1', object: 'chat.completion.chunk', created: 1767225600, model: 'up-model', choices: [],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, prompt_tokens_details: { cached_tokens: cached } } })}\n\n`

export const DONE = 'data: [DONE]\n\n'

/** A plain chat text stream: role chunk, pieces, finish, usage chunk, [DONE]. */
export function chatTextStream (pieces: string[], usage = { prompt: 10, completion: pieces.length, cached: 0 }): string[] {
  return [
    chatChunk({ role: 'assistant', content: '' }),
    ...pieces.map(p => chatChunk({ content: p })),
    chatChunk({}, 'stop'),
    chatUsageChunk(usage.prompt, usage.completion, usage.cached),
    DONE,
  ]
}

export function chatCompletion (text: string, usage = { prompt: 10, completion: 3, cached: 0 }, extra: Record<string, unknown> = {}): unknown {
  return {
    id: 'chatcmpl-up1', object: 'chat.completion', created: 1767225600, model: 'up-model',
    choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion, prompt_tokens_details: { cached_tokens: usage.cached } },
    ...extra,
  }
}

export const msgEvent = (name: string, data: Record<string, unknown>): string => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`

/**
 * Token counts a fake messages upstream reports: `cacheWrite1h`, when given, is the part of
 * `cacheWrite` written to a one-hour cache, reported in `cache_creation` as Anthropic does.
 */
export interface MessagesUsageCounts { input: number, output: number, cacheRead: number, cacheWrite: number, cacheWrite1h?: number }

/** The input side of a messages `usage`: uncached input, cache writes (by lifetime when cacheWrite1h is given), cache reads. */
function messagesInputUsage (u: MessagesUsageCounts): Record<string, unknown> {
  const out: Record<string, unknown> = { input_tokens: u.input, cache_creation_input_tokens: u.cacheWrite, cache_read_input_tokens: u.cacheRead }
  if (u.cacheWrite1h !== undefined) out.cache_creation = { ephemeral_5m_input_tokens: u.cacheWrite - u.cacheWrite1h, ephemeral_1h_input_tokens: u.cacheWrite1h }
  return out
}

/** A plain messages text stream. */
export function messagesTextStream (pieces: string[], usage: MessagesUsageCounts = { input: 10, output: pieces.length, cacheRead: 0, cacheWrite: 0 }): string[] {
  return [
    msgEvent('message_start',
      { message: { id: 'msg_up1', type: 'message', role: 'assistant', model: 'up-model', content: [], stop_reason: null, stop_sequence: null,
        usage: { ...messagesInputUsage(usage), output_tokens: 1 } } }),
    msgEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    msgEvent('ping', {}),
    ...pieces.map(p => msgEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: p } })),
    msgEvent('content_block_stop', { index: 0 }),
    msgEvent('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: usage.output } }),
    msgEvent('message_stop', {}),
  ]
}

export function messagesResponse (text: string, usage: MessagesUsageCounts = { input: 10, output: 3, cacheRead: 0, cacheWrite: 0 }): unknown {
  return {
    id: 'msg_up1', type: 'message', role: 'assistant', model: 'up-model', content: [{ type: 'text', text }],
    stop_reason: 'end_turn', stop_sequence: null,
    usage: { ...messagesInputUsage(usage), output_tokens: usage.output },
  }
}

/** Token counts a fake Responses API upstream reports. */
export interface ResponsesUsageCounts { input: number, output: number, cached: number }

/** The Responses API `usage` object: input_tokens include the cached ones. */
export function responsesUsage (u: ResponsesUsageCounts): Record<string, unknown> {
  return { input_tokens: u.input, input_tokens_details: { cached_tokens: u.cached }, output_tokens: u.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: u.input + u.output }
}

/** A Responses API `response` object holding one text message; `usage` is the object sent (see responsesUsage). */
export function responsesResponse (text: string, usage: Record<string, unknown> | null = responsesUsage({ input: 10, output: 3, cached: 0 }), status = 'completed'): Record<string, unknown> {
  const output = text === '' ? [] : [{ type: 'message', id: 'msg_up1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] }]
  return {
    id: 'resp_up1', object: 'response', created_at: 1767225600, status, error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    model: 'up-model', output, usage, parallel_tool_calls: true, tool_choice: 'auto', tools: [], store: false,
  }
}

/** One Responses API stream event (`event:` line and `type` both set). */
export const respEvent = (type: string, sequence: number, data: Record<string, unknown>): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence, ...data })}\n\n`

/**
 * A Responses API text stream as an upstream sends it: response.created, in_progress, the message
 * item with one output_text delta per piece, then response.completed carrying `usage`.
 */
export function responsesTextStream (pieces: string[], usage: Record<string, unknown> = responsesUsage({ input: 10, output: pieces.length, cached: 0 })): string[] {
  let seq = 0
  const ev = (type: string, data: Record<string, unknown>) => respEvent(type, seq++, data)
  const text = pieces.join('')
  const shell = { ...responsesResponse('', null), status: 'in_progress' }
  const item = { type: 'message', id: 'msg_up1', status: 'in_progress', role: 'assistant', content: [] }
  const part = { type: 'output_text', text: '', annotations: [] }
  return [
    ev('response.created', { response: shell }),
    ev('response.in_progress', { response: shell }),
    ev('response.output_item.added', { output_index: 0, item }),
    ev('response.content_part.added', { item_id: 'msg_up1', output_index: 0, content_index: 0, part }),
    ...pieces.map(delta => ev('response.output_text.delta', { item_id: 'msg_up1', output_index: 0, content_index: 0, delta, logprobs: [] })),
    ev('response.output_text.done', { item_id: 'msg_up1', output_index: 0, content_index: 0, text, logprobs: [] }),
    ev('response.content_part.done', { item_id: 'msg_up1', output_index: 0, content_index: 0, part: { ...part, text } }),
    ev('response.output_item.done', { output_index: 0, item: { ...item, status: 'completed', content: [{ ...part, text }] } }),
    ev('response.completed', { response: responsesResponse(text, usage) }),
  ]
}
