/**
 * @module testing/fake-gemini – a loopback HTTP server that speaks the Gemini API's wire format
 * (`:generateContent` JSON, `:streamGenerateContent?alt=sse` server-sent events each holding a
 * whole `GenerateContentResponse`, `:countTokens`), checks the API key (`x-goog-api-key`, or a
 * caller's own check such as a bearer token), checks bodies as the service does
 * (checkGeminiRequest) including Gemini 3's rule that a function call of the current turn comes
 * back with the thought signature it was given, answers as scripted per request (text, thoughts,
 * function calls, usage with cached and thought tokens, finish reasons, blocked prompts, errors,
 * errors inside a stream) and records every request. Routes end in `/models/<m>:<method>`, so
 * Vertex AI's longer paths (`/v1/projects/<p>/locations/<l>/publishers/google/models/<m>:…`) are
 * served too.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Recorded } from './fake-upstream.ts'
import { checkGeminiRequest, isObj } from './gemini-check.ts'

export { checkGeminiRequest } from './gemini-check.ts'
export type { GeminiCheckOptions } from './gemini-check.ts'

/** The API key the fake accepts by default. */
export const GEMINI_TEST_KEY = 'AIza-test-gemini-key'

export type GeminiMethodName = 'generateContent' | 'streamGenerateContent' | 'countTokens' | 'unknown'

/** A part of a scripted answer. Text may be a list: one stream chunk per piece. */
export type GeminiScriptPart =
  | { text: string | string[], thought?: boolean, sign?: boolean }
  | { functionCall: { name: string, args?: Record<string, unknown>, id?: string }, sign?: boolean }
  /** A part with only a thought signature (Gemini streams one at the end of an answer). */
  | { signatureOnly: true }

/** Token counts of a scripted answer (`promptTokenCount` includes `cached`; `candidates` excludes `thoughts`). */
export interface GeminiUsage { prompt?: number, cached?: number, candidates?: number, thoughts?: number, toolUsePrompt?: number }

/** A scripted answer. */
export interface GeminiAnswer {
  /**
   * Parts in order (default one text part). A function call is signed when `sign` is true, or by
   * default when it is the answer's first (Gemini 3 signs the first call of each step); other
   * parts only with `sign: true`.
   */
  parts?: GeminiScriptPart[]
  /** Default STOP. */
  finishReason?: string
  usage?: GeminiUsage
  /** The prompt was blocked: no candidates, `promptFeedback.blockReason`. */
  blockReason?: string
  /** Streams: an error object sent as an event after this many chunks, then the stream ends. */
  streamError?: { after: number, code: number, status: string, message: string }
  /** Streams: the connection is destroyed after this many chunks. */
  cutAfter?: number
  /** Streams: a pause before each chunk after the first (ms). */
  delayMs?: number
}

/** A scripted error answer (`{ error: { code, message, status, details } }`). */
export interface GeminiErrorReply {
  error: { code: number, status: string, message?: string, retryDelay?: string, reason?: string, headers?: Record<string, string> }
}

export type GeminiReply = GeminiAnswer | GeminiErrorReply
export type GeminiRecordedScript = GeminiReply | ((req: GeminiRecorded) => GeminiReply | Promise<GeminiReply>)
export type GeminiCountScript = number | GeminiErrorReply | ((req: GeminiRecorded) => number | GeminiErrorReply)

/** A request as the fake received it. */
export interface GeminiRecorded extends Recorded {
  method: string
  /** The method named by the path; `unknown` when it did not route. */
  operation: GeminiMethodName
  /** The model as named in the path (`gemini-2.5-flash`, `tunedModels/x` keeps its collection). */
  model: string
  /** The query string (`alt=sse`). */
  query: string
  /** Why the request was refused before its body was looked at (auth), if it was. */
  authError?: string
  /** Why the body was refused (checkGeminiRequest), if it was. */
  refused?: string
}

export interface FakeGeminiOptions {
  /** The API key accepted in `x-goog-api-key` (default GEMINI_TEST_KEY). Ignored when `auth` is given. */
  apiKey?: string
  /** A check of its own (a bearer token): the message of a 401 UNAUTHENTICATED, or undefined to let the request in. */
  auth?: (req: IncomingMessage) => string | undefined | Promise<string | undefined>
  /** The default reply once the queue is empty (default: a text answer). */
  reply?: GeminiRecordedScript
  /** The countTokens answer (default: ceil(bytes of the body / 4)). */
  countTokens?: GeminiCountScript
  /** Refuse bodies the Gemini API would refuse (default true). */
  validate?: boolean
  /** Refuse a function call of the current turn that lost its thought signature (default true). */
  requireSignatures?: boolean
  /** Models that refuse temperature, topP and topK (exact names). */
  noSampling?: readonly string[]
  /** Models served; another gets 404 NOT_FOUND (default: any). */
  models?: readonly string[]
}

export interface FakeGemini {
  /** `http://127.0.0.1:<port>`: the adapter's baseUrl, the SDK's `httpOptions.baseUrl`. */
  origin: string
  apiKey: string
  /** Every request in arrival order, refused ones included. */
  requests: GeminiRecorded[]
  /** Every thought signature the fake gave. */
  issued: Set<string>
  /** Queues replies: each answers the next generate request that passes auth and checks. */
  next (...replies: GeminiRecordedScript[]): void
  reply (script: GeminiRecordedScript): void
  countTokens (script: GeminiCountScript): void
  close (): Promise<void>
}

const ROUTE = /\/((?:models|tunedModels)\/[^/:]+):(generateContent|streamGenerateContent|countTokens)$/

/** Writes a Gemini error answer. */
export function geminiError (res: ServerResponse, e: GeminiErrorReply['error']): void {
  const details: unknown[] = []
  if (e.reason !== undefined) details.push({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: e.reason, domain: 'googleapis.com' })
  if (e.retryDelay !== undefined) details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: e.retryDelay })
  const error: Record<string, unknown> = { code: e.code, message: e.message ?? e.status, status: e.status }
  if (details.length > 0) error.details = details
  res.writeHead(e.code, { 'content-type': 'application/json; charset=UTF-8', ...e.headers })
  res.end(JSON.stringify({ error }))
}

/** `usageMetadata` for counts (the totals Gemini reports; `promptTokenCount` includes the cached part). */
export function geminiUsage (u: GeminiUsage = {}, final = true): Record<string, unknown> {
  const prompt = u.prompt ?? 10
  const out: Record<string, unknown> = { promptTokenCount: prompt }
  if (!final) return out
  const candidates = u.candidates ?? 5
  out.candidatesTokenCount = candidates
  out.totalTokenCount = prompt + candidates + (u.thoughts ?? 0) + (u.toolUsePrompt ?? 0)
  if (u.cached !== undefined) out.cachedContentTokenCount = u.cached
  if (u.thoughts !== undefined) out.thoughtsTokenCount = u.thoughts
  if (u.toolUsePrompt !== undefined) out.toolUsePromptTokenCount = u.toolUsePrompt
  return out
}

function newSignature (): string {
  return randomBytes(48).toString('base64')
}

/** The parts of an answer as chunks: each text piece, each function call, each signature its own. */
function answerChunks (a: GeminiAnswer, issued: Set<string>): Array<Array<Record<string, unknown>>> {
  const chunks: Array<Array<Record<string, unknown>>> = []
  let firstCall = true
  for (const p of a.parts ?? [{ text: 'Hello from Gemini' }]) {
    const sign = (): string => { const s = newSignature(); issued.add(s); return s }
    if ('signatureOnly' in p) { chunks.push([{ text: '', thoughtSignature: sign() }]); continue }
    if ('functionCall' in p) {
      const part: Record<string, unknown> = { functionCall: { name: p.functionCall.name, args: p.functionCall.args ?? {}, ...(p.functionCall.id ? { id: p.functionCall.id } : {}) } }
      if (p.sign ?? firstCall) part.thoughtSignature = sign()
      firstCall = false
      chunks.push([part])
      continue
    }
    const pieces = Array.isArray(p.text) ? p.text : [p.text]
    pieces.forEach((t, i) => {
      const part: Record<string, unknown> = { text: t }
      if (p.thought) part.thought = true
      if (p.sign === true && i === pieces.length - 1) part.thoughtSignature = sign()
      chunks.push([part])
    })
  }
  return chunks
}

/** The whole answer as one GenerateContentResponse: a stream's chunks joined (adjacent text of one kind merged, as Gemini sends it). */
function joined (chunks: Array<Array<Record<string, unknown>>>): Array<Record<string, unknown>> {
  const parts: Array<Record<string, unknown>> = []
  for (const p of chunks.flat()) {
    const prev = parts[parts.length - 1]
    if (prev && typeof prev.text === 'string' && typeof p.text === 'string' && prev.thought === p.thought && prev.thoughtSignature === undefined && p.text !== '') {
      prev.text += p.text as string
      if (p.thoughtSignature !== undefined) prev.thoughtSignature = p.thoughtSignature
    } else parts.push({ ...p })
  }
  return parts
}

function response (model: string, parts: Array<Record<string, unknown>> | undefined, a: GeminiAnswer, final: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = { modelVersion: model, responseId: randomBytes(8).toString('hex') }
  if (a.blockReason !== undefined) {
    out.promptFeedback = { blockReason: a.blockReason }
    out.usageMetadata = geminiUsage({ ...a.usage, candidates: 0 })
    return out
  }
  const c: Record<string, unknown> = { content: { role: 'model', parts: parts ?? [] }, index: 0 }
  if (final) c.finishReason = a.finishReason ?? 'STOP'
  out.candidates = [c]
  out.usageMetadata = geminiUsage(a.usage, final)
  return out
}

const isError = (r: GeminiReply): r is GeminiErrorReply => 'error' in r && isObj((r as GeminiErrorReply).error)

/** Starts a fake Gemini API on 127.0.0.1 (a free port). */
export async function startFakeGemini (opts: FakeGeminiOptions = {}): Promise<FakeGemini> {
  const apiKey = opts.apiKey ?? GEMINI_TEST_KEY
  const validate = opts.validate ?? true
  const requireSignatures = opts.requireSignatures ?? true
  let fallback: GeminiRecordedScript = opts.reply ?? {}
  let count: GeminiCountScript = opts.countTokens ?? (req => Math.max(1, Math.ceil(Buffer.byteLength(req.text) / 4)))
  const queue: GeminiRecordedScript[] = []
  const sockets = new Set<Socket>()

  const up: FakeGemini = {
    origin: '',
    apiKey,
    requests: [],
    issued: new Set(),
    next (...replies) { queue.push(...replies) },
    reply (script) { fallback = script },
    countTokens (script) { count = script },
    async close () {
      for (const s of sockets) s.destroy()
      await new Promise<void>(resolve => server.close(() => resolve()))
    },
  }

  async function authenticate (req: IncomingMessage): Promise<GeminiErrorReply['error'] | undefined> {
    if (opts.auth !== undefined) {
      const msg = await opts.auth(req)
      return msg === undefined ? undefined : { code: 401, status: 'UNAUTHENTICATED', message: msg }
    }
    const key = req.headers['x-goog-api-key']
    if (key === undefined || key === '') return { code: 403, status: 'PERMISSION_DENIED',
      message: 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.' }
    if (key !== apiKey) return { code: 400, status: 'INVALID_ARGUMENT', message: 'API key not valid. Please pass a valid API key.', reason: 'API_KEY_INVALID' }
    return undefined
  }

  async function serve (req: IncomingMessage, res: ServerResponse, text: string): Promise<void> {
    const url = req.url ?? '/'
    const [path, query = ''] = url.split('?')
    const route = ROUTE.exec(path)
    let body: unknown = text
    try { body = JSON.parse(text) } catch { /* kept as text */ }
    const rec: GeminiRecorded = {
      method: req.method ?? '', path: url, headers: req.headers, body, text, query,
      operation: route && req.method === 'POST' ? route[2] as GeminiMethodName : 'unknown',
      model: route ? decodeURIComponent(route[1].replace(/^models\//, '')) : '',
    }
    up.requests.push(rec)
    const authFailure = await authenticate(req)
    if (authFailure) { rec.authError = authFailure.message; geminiError(res, authFailure); return }
    if (rec.operation === 'unknown') { geminiError(res, { code: 404, status: 'NOT_FOUND', message: `The requested URL ${path} was not found on this server.` }); return }
    if (typeof body === 'string') { geminiError(res, { code: 400, status: 'INVALID_ARGUMENT', message: 'Invalid JSON payload received.' }); return }
    if (opts.models && !opts.models.includes(rec.model)) {
      geminiError(res, { code: 404, status: 'NOT_FOUND', message: `models/${rec.model} is not found for API version v1beta, or is not supported for generateContent.` })
      return
    }
    if (rec.operation === 'countTokens') {
      // The Gemini API counts `contents`, or a whole request in `generateContentRequest`; Vertex AI takes the request's fields flat.
      const inner = isObj(body) && isObj(body.generateContentRequest) ? body.generateContentRequest : body
      if (validate) {
        const msg = checkGeminiRequest(inner)
        if (msg) { rec.refused = msg; geminiError(res, { code: 400, status: 'INVALID_ARGUMENT', message: msg }); return }
      }
      const c = typeof count === 'function' ? count(rec) : count
      if (typeof c !== 'number') { geminiError(res, c.error); return }
      res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' })
      res.end(JSON.stringify({ totalTokens: c, promptTokensDetails: [{ modality: 'TEXT', tokenCount: c }] }))
      return
    }
    if (validate) {
      const msg = checkGeminiRequest(body, { issued: requireSignatures ? up.issued : undefined, noSampling: opts.noSampling?.includes(rec.model) })
      if (msg) { rec.refused = msg; geminiError(res, { code: 400, status: 'INVALID_ARGUMENT', message: msg }); return }
    }
    const script = queue.shift() ?? fallback
    const reply = typeof script === 'function' ? await script(rec) : script
    if (isError(reply)) { geminiError(res, reply.error); return }
    const chunks = answerChunks(reply, up.issued)
    if (rec.operation === 'generateContent') {
      res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' })
      res.end(JSON.stringify(response(rec.model, joined(chunks), reply, true)))
      return
    }
    if (!/(^|&)alt=sse(&|$)/.test(query)) { geminiError(res, { code: 400, status: 'INVALID_ARGUMENT', message: 'the fake serves streams as server-sent events only (alt=sse)' }); return }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    // Gemini sends each chunk's parts, the counts so far on each, the finish and final counts on the last.
    const events = chunks.length === 0 ? [[]] : chunks
    for (let i = 0; i < events.length; i++) {
      if (reply.cutAfter !== undefined && i >= reply.cutAfter) { res.socket?.destroy(); return }
      if (reply.streamError !== undefined && i >= reply.streamError.after) {
        const e = reply.streamError
        res.end(`data: ${JSON.stringify({ error: { code: e.code, message: e.message, status: e.status } })}\r\n\r\n`)
        return
      }
      if (i > 0 && reply.delayMs) await sleep(reply.delayMs)
      const last = i === events.length - 1
      const data = response(rec.model, events[i], reply, last)
      await new Promise<void>(resolve => res.write(`data: ${JSON.stringify(data)}\r\n\r\n`, () => resolve()))
    }
    res.end()
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      serve(req, res, Buffer.concat(chunks).toString('utf8')).catch(err => {
        if (!res.headersSent) geminiError(res, { code: 500, status: 'INTERNAL', message: `fake gemini: ${String(err)}` })
        else res.socket?.destroy()
      })
    })
  })
  server.on('connection', s => { sockets.add(s); s.on('close', () => sockets.delete(s)) })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  up.origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  return up
}
