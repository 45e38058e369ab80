/**
 * @module testing/gemini-conformance – Google's Gemini wire for the provider conformance suite
 * (`ConformanceWire`), as the Gemini API serves it (`geminiWire`: `/v1beta/models/{model}:…`,
 * an API key in `x-goog-api-key`) and as Vertex AI serves Gemini models (`vertexGeminiWire`:
 * `/v1/projects/{p}/locations/{l}/publishers/google/models/{model}:…`, a bearer token the fake's
 * token endpoint issued). Each request the fake upstream receives is checked as Gemini checks it
 * (the route, `?alt=sse` on a stream, the credentials, the body by checkGeminiRequest) and read
 * back as the messages body the golden cases are written against (gemini-wire-request); the
 * golden messages answers, streams and errors go out as Gemini's JSON, SSE chunks and Google
 * errors (gemini-wire-answer).
 */
import type { SseEvent } from '../core/dispatch/provider.ts'
import type { Recorded } from './fake-upstream.ts'
import type { FakeVertex } from './fake-vertex.ts'
import { UPSTREAM_MODEL, type ConformanceWire, type WireReply } from './conformance-rig.ts'
import { checkGeminiRequest } from './gemini-check.ts'
import { GEMINI_TEST_KEY } from './fake-gemini.ts'
import { messagesFromGemini } from './gemini-wire-request.ts'
import { geminiAnswer, geminiErrorReply, geminiStream } from './gemini-wire-answer.ts'

export { messagesFromGemini } from './gemini-wire-request.ts'

export interface GeminiWireOptions {
  /** The API key accepted in `x-goog-api-key` (default GEMINI_TEST_KEY). */
  apiKey?: string
  /** The API version path segment (default `v1beta`). */
  apiVersion?: string
  /** The model the path must name (default `up-conformance`). */
  model?: string
  /**
   * Thought signatures the upstream issued: a function call of the current turn must carry one
   * (Gemini 3's rule). Default: not checked, as for the Gemini 2.5 models.
   */
  issued?: ReadonlySet<string>
  /** The model refuses `temperature`, `topP` and `topK` (Gemini 3 under the adapter's `noSampling` default). */
  noSampling?: boolean
}

export interface VertexGeminiWireOptions extends Omit<GeminiWireOptions, 'apiKey' | 'apiVersion'> {
  /** The model the decoded request reports (default `up-conformance`, what the suite's golden cases expect). */
  reportAs?: string
}

type Method = 'generateContent' | 'streamGenerateContent'

const GEMINI_PATH = /^\/(v[0-9a-z]+)\/models\/([^/:]+):(generateContent|streamGenerateContent)$/
const VERTEX_PATH = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/google\/models\/([^/:]+):(generateContent|streamGenerateContent)$/

/** The checks every host of the Gemini wire makes once the route and credentials passed: the query, the body. */
function decodeBody (req: Recorded, method: Method, model: string, opts: GeminiWireOptions, reportAs: string): Record<string, unknown> {
  const query = req.path.split('?')[1] ?? ''
  const sse = /(^|&)alt=sse(&|$)/.test(query)
  // Without alt=sse Gemini streams one JSON array, which the adapter does not read.
  if (method === 'streamGenerateContent' && !sse) throw new Error('INVALID_ARGUMENT: a stream is asked for without alt=sse')
  if (method === 'generateContent' && query !== '') throw new Error(`INVALID_ARGUMENT: a query on generateContent: ${query}`)
  const want = opts.model ?? UPSTREAM_MODEL
  if (model !== want) throw new Error(`NOT_FOUND: model ${model}, not ${want}`)
  let body: unknown
  try { body = JSON.parse(req.text) } catch { throw new Error('INVALID_ARGUMENT: Invalid JSON payload received.') }
  const invalid = checkGeminiRequest(body, { issued: opts.issued, noSampling: opts.noSampling })
  if (invalid !== undefined) throw new Error(`INVALID_ARGUMENT: ${invalid}`)
  return messagesFromGemini(body as Record<string, unknown>, reportAs, method === 'streamGenerateContent')
}

/** The answering half, the same on every host of the Gemini wire. */
const ANSWERS: Pick<ConformanceWire, 'encodeAnswer' | 'encodeStream' | 'encodeError'> = {
  encodeAnswer: (body: Record<string, unknown>): WireReply => geminiAnswer(body),
  encodeStream: (events: readonly SseEvent[]) => geminiStream(events),
  encodeError: (status: number, body: unknown): WireReply => geminiErrorReply(status, body),
}

/**
 * The conformance wire of the Gemini API: pass it as `wire` to `runProviderConformance` for an
 * adapter that speaks Gemini's `generateContent` (declaring `messages`).
 * @example
 * await runProviderConformance(t, {
 *   adapter: gemini, wire: geminiWire(), cacheWrites: false,
 *   config: baseUrl => ({ apiKey: GEMINI_TEST_KEY, baseUrl }),
 * })
 */
export function geminiWire (opts: GeminiWireOptions = {}): ConformanceWire {
  const apiKey = opts.apiKey ?? GEMINI_TEST_KEY
  const version = opts.apiVersion ?? 'v1beta'
  return {
    decodeRequest (req: Recorded): Record<string, unknown> {
      const route = GEMINI_PATH.exec(req.path.split('?')[0])
      if (!route || req.method !== 'POST') throw new Error(`NOT_FOUND: not a Gemini API route: ${req.method} ${req.path}`)
      if (route[1] !== version) throw new Error(`NOT_FOUND: API version ${route[1]}, not ${version}`)
      const key = req.headers['x-goog-api-key']
      if (key === undefined || key === '') throw new Error('PERMISSION_DENIED: no API key (x-goog-api-key)')
      if (key !== apiKey) throw new Error('INVALID_ARGUMENT: API key not valid. Please pass a valid API key.')
      return decodeBody(req, route[3] as Method, decodeURIComponent(route[2]), opts, UPSTREAM_MODEL)
    },
    ...ANSWERS,
  }
}

/**
 * The Gemini wire of Vertex AI (`publishers/google`), checking bearer tokens against `fake` (its
 * token endpoint issues them): for the `vertex` adapter's Gemini models.
 */
export function vertexGeminiWire (fake: FakeVertex, opts: VertexGeminiWireOptions = {}): ConformanceWire {
  return {
    decodeRequest (req: Recorded): Record<string, unknown> {
      const m = VERTEX_PATH.exec(req.path.split('?')[0])
      if (!m || req.method !== 'POST') throw new Error(`NOT_FOUND: not a Gemini route of Vertex: ${req.method} ${req.path}`)
      if (decodeURIComponent(m[1]) !== fake.project || decodeURIComponent(m[2]) !== fake.location) throw new Error(`PERMISSION_DENIED: another project or location: ${req.path}`)
      const auth = String(req.headers.authorization ?? '')
      if (!/^Bearer /.test(auth) || !fake.issued.includes(auth.slice(7))) throw new Error('UNAUTHENTICATED: not a token the token endpoint issued')
      if (req.headers['x-goog-api-key'] !== undefined) throw new Error('INVALID_ARGUMENT: an API key beside the bearer token')
      return decodeBody(req, m[4] as Method, decodeURIComponent(m[3]), opts, opts.reportAs ?? UPSTREAM_MODEL)
    },
    ...ANSWERS,
  }
}
