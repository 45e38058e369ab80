/**
 * @module testing/fake-vertex – a loopback HTTP server that plays Google Cloud for a Vertex AI
 * adapter: an OAuth token endpoint that verifies a service account's RS256 assertion (signature
 * with the key's public half, issuer, audience, scope, lifetime) and issues short-lived tokens;
 * Claude's `rawPredict` / `streamRawPredict` and `count-tokens:rawPredict` as Vertex serves them,
 * each checking the bearer token (unknown, expired or revoked: 401 UNAUTHENTICATED) and the body
 * (`anthropic_version`, no `model`); Gemini's `generateContent` / `streamGenerateContent` /
 * `countTokens` at `publishers/google`, after the same bearer check, served by a fake Gemini (see
 * fake-gemini) behind it; scripted answers; every request recorded.
 */
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto'
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { jwtVerify, decodeProtectedHeader } from 'jose'
import { json, msgEvent, type Recorded } from './fake-upstream.ts'
import { startFakeGemini, type FakeGemini, type FakeGeminiOptions } from './fake-gemini.ts'

export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16'
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform'

/** A content block of a scripted Claude answer; text pieces stream as separate deltas. */
export type VertexClaudeBlock =
  | { text: string | readonly string[] }
  | { toolUse: { id: string, name: string, input: unknown } }
  | { thinking: string, signature: string }

export interface VertexClaudeAnswer {
  content?: readonly VertexClaudeBlock[]
  stopReason?: string
  usage?: { input: number, output: number, cacheRead?: number, cacheWrite?: number }
}

/** A scripted error: the status and the body Google (or the model) answers. */
export interface VertexErrorReply { error: { status: number, body?: unknown, headers?: Record<string, string> } }

export type VertexReply = VertexClaudeAnswer | VertexErrorReply
export type VertexScript = VertexReply | ((req: VertexRecorded) => VertexReply)

export type VertexOperation = 'token' | 'rawPredict' | 'streamRawPredict' | 'count-tokens' | 'generateContent' | 'streamGenerateContent' | 'countTokens' | 'unknown'

export interface VertexRecorded extends Recorded {
  operation: VertexOperation
  /** The model named by the path (`''` for the token endpoint and count tokens). */
  model: string
  /** The bearer token sent ('' when none). */
  token: string
  /** Why the call was refused before its answer (401, 400), else undefined. */
  refused?: string
}

/** A service account key file as Google issues it, for the fake's key pair. */
export interface TestServiceAccount {
  type: 'service_account'
  project_id: string
  private_key_id: string
  private_key: string
  client_email: string
  client_id: string
  token_uri: string
}

export interface FakeVertexOptions {
  project?: string
  location?: string
  /** Lifetime of an issued token, seconds (default 3600). */
  tokenTtlS?: number
  /** The default reply once the queue is empty (default: a short text answer). */
  reply?: VertexScript
  /** The count-tokens answer (default: ceil(JSON bytes of the messages / 4)). */
  countTokens?: number
  /** Milliseconds the token endpoint waits before answering (makes concurrent exchanges overlap). */
  tokenDelayMs?: number
  /** The fake Gemini behind `publishers/google` (its own auth is off: the bearer is checked here). */
  gemini?: Omit<FakeGeminiOptions, 'auth' | 'apiKey'>
}

export interface FakeVertex {
  origin: string
  project: string
  location: string
  requests: VertexRecorded[]
  /** A key file for this fake's token endpoint (its private key signs, the fake verifies with the public half). */
  serviceAccount: TestServiceAccount
  /** Tokens issued so far, in order. */
  readonly issued: readonly string[]
  /** Assertions refused so far (why). */
  readonly refusedAssertions: readonly string[]
  /** The fake Gemini that answers Gemini models (script it, read its requests). */
  gemini: FakeGemini
  /** Queues a reply for the next Claude inference call. */
  next (reply: VertexScript): void
  /** Sets the reply once the queue is empty. */
  reply (script: VertexScript): void
  /** From now on a token is refused (401) although unexpired. */
  revoke (token: string): void
  /** The token endpoint refuses every assertion from now on (invalid_grant), or accepts again. */
  refuseTokens (on: boolean): void
  close (): Promise<void>
}

const GEMINI_PATH = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/google\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/
const CLAUDE_PATH = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/anthropic\/models\/([^/:]+):(rawPredict|streamRawPredict)$/

function googleError (res: ServerResponse, status: number, code: string, message: string): void {
  json(res, status, { error: { code: status, message, status: code } })
}

const anthropicError = (res: ServerResponse, message: string): void => json(res, 400, { type: 'error', error: { type: 'invalid_request_error', message } })

/** The body of a Claude request as Vertex checks it; a reason when refused. */
export function checkVertexClaudeBody (body: unknown, op: VertexOperation): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'The request body is not valid JSON.'
  const b = body as Record<string, unknown>
  if (b.anthropic_version !== VERTEX_ANTHROPIC_VERSION) return `anthropic_version: expected "${VERTEX_ANTHROPIC_VERSION}"`
  if (op === 'count-tokens') {
    if (typeof b.model !== 'string' || !b.model.startsWith('claude-')) return 'model: Field required'
  } else {
    if ('model' in b) return 'model: Extra inputs are not permitted'
    if (!Number.isInteger(b.max_tokens)) return 'max_tokens: Field required'
    if ((op === 'streamRawPredict') !== (b.stream === true)) return `stream: ${op} needs stream ${op === 'streamRawPredict'}`
  }
  if (!Array.isArray(b.messages) || b.messages.length === 0) return 'messages: at least one message is required'
  for (const [i, m] of b.messages.entries()) {
    const role = (m as { role?: unknown } | null)?.role
    if (role !== 'user' && role !== 'assistant') return `messages.${i}.role: Input should be 'user' or 'assistant'`
  }
  return undefined
}

function usageOf (a: VertexClaudeAnswer): Record<string, number> {
  const u = a.usage ?? { input: 10, output: 5 }
  return { input_tokens: u.input, cache_creation_input_tokens: u.cacheWrite ?? 0, cache_read_input_tokens: u.cacheRead ?? 0, output_tokens: u.output }
}

function contentOf (a: VertexClaudeAnswer): readonly VertexClaudeBlock[] {
  return a.content ?? [{ text: 'Hello from Vertex' }]
}

function stopOf (a: VertexClaudeAnswer): string {
  return a.stopReason ?? (contentOf(a).some(b => 'toolUse' in b) ? 'tool_use' : 'end_turn')
}

/** The messages answer Claude on Vertex returns for a scripted answer. */
export function vertexClaudeResponse (a: VertexClaudeAnswer, model: string): Record<string, unknown> {
  const content = contentOf(a).map(b => {
    if ('text' in b) return { type: 'text', text: typeof b.text === 'string' ? b.text : b.text.join('') }
    if ('toolUse' in b) return { type: 'tool_use', id: b.toolUse.id, name: b.toolUse.name, input: b.toolUse.input }
    return { type: 'thinking', thinking: b.thinking, signature: b.signature }
  })
  return { id: `msg_vrtx_${randomUUID().slice(0, 8)}`, type: 'message', role: 'assistant', model, content, stop_reason: stopOf(a), stop_sequence: null, usage: usageOf(a) }
}

/** The messages SSE events Claude on Vertex streams for a scripted answer (ping and `vertex_event` included). */
export function vertexClaudeEvents (a: VertexClaudeAnswer, model: string): string[] {
  const usage = usageOf(a)
  const events = [msgEvent('message_start', { message: { id: `msg_vrtx_${randomUUID().slice(0, 8)}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null,
    usage: { ...usage, output_tokens: 1 } } }), msgEvent('ping', {})]
  contentOf(a).forEach((b, index) => {
    if ('text' in b) {
      events.push(msgEvent('content_block_start', { index, content_block: { type: 'text', text: '' } }))
      for (const p of typeof b.text === 'string' ? [b.text] : b.text) events.push(msgEvent('content_block_delta', { index, delta: { type: 'text_delta', text: p } }))
    } else if ('toolUse' in b) {
      events.push(msgEvent('content_block_start', { index, content_block: { type: 'tool_use', id: b.toolUse.id, name: b.toolUse.name, input: {} } }))
      const j = JSON.stringify(b.toolUse.input)
      const cut = Math.ceil(j.length / 2)
      for (const p of [j.slice(0, cut), j.slice(cut)]) events.push(msgEvent('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } }))
    } else {
      events.push(msgEvent('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }))
      events.push(msgEvent('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: b.thinking } }))
      events.push(msgEvent('content_block_delta', { index, delta: { type: 'signature_delta', signature: b.signature } }))
    }
    events.push(msgEvent('content_block_stop', { index }))
  })
  events.push(msgEvent('message_delta', { delta: { stop_reason: stopOf(a), stop_sequence: null }, usage: { output_tokens: usage.output_tokens } }))
  events.push(msgEvent('message_stop', {}))
  return events
}

export async function startFakeVertex (opts: FakeVertexOptions = {}): Promise<FakeVertex> {
  const project = opts.project ?? 'test-project'
  const location = opts.location ?? 'us-east5'
  const ttlS = opts.tokenTtlS ?? 3600
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  const kid = randomUUID().replace(/-/g, '')
  const tokens = new Map<string, number>()
  const revoked = new Set<string>()
  const issued: string[] = []
  const refusedAssertions: string[] = []
  const queue: VertexScript[] = []
  let refuseAll = false
  let fallback: VertexScript = opts.reply ?? {}
  const sockets = new Set<Socket>()
  const gemini = await startFakeGemini({ ...opts.gemini, auth: () => undefined })
  const fake: FakeVertex = {
    origin: '',
    project,
    location,
    requests: [],
    serviceAccount: { type: 'service_account', project_id: project, private_key_id: kid, private_key: pem, client_email: `gateway@${project}.iam.gserviceaccount.com`,
      client_id: '100000000000000000001', token_uri: '' },
    issued,
    refusedAssertions,
    gemini,
    next (reply) { queue.push(reply) },
    reply (script) { fallback = script },
    revoke (token) { revoked.add(token) },
    refuseTokens (on) { refuseAll = on },
    async close () {
      for (const s of sockets) s.destroy()
      await new Promise<void>(resolve => server.close(() => resolve()))
      await gemini.close()
    },
  }

  /** Hands a Gemini request, as received, to the fake Gemini and relays its answer. */
  function toGemini (rec: VertexRecorded, res: ServerResponse): void {
    const { host: _host, ...headers } = rec.headers
    const out = httpRequest(`${gemini.origin}${rec.path}`, { method: 'POST', headers }, up => {
      res.writeHead(up.statusCode ?? 502, up.headers)
      up.pipe(res)
    })
    out.on('error', () => res.destroy())
    out.end(rec.text)
  }

  async function tokenEndpoint (rec: VertexRecorded, res: ServerResponse): Promise<void> {
    if (opts.tokenDelayMs) await new Promise(resolve => setTimeout(resolve, opts.tokenDelayMs))
    const refuse = (why: string): void => {
      refusedAssertions.push(why)
      rec.refused = why
      json(res, 400, { error: 'invalid_grant', error_description: why })
    }
    const form = new URLSearchParams(rec.text)
    if (!String(rec.headers['content-type']).startsWith('application/x-www-form-urlencoded')) return refuse('not a form')
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return refuse('Invalid grant_type')
    const assertion = form.get('assertion') ?? ''
    if (refuseAll) return refuse('Invalid JWT Signature.')
    try {
      if (decodeProtectedHeader(assertion).kid !== kid) return refuse('Invalid key id.')
      const { payload } = await jwtVerify(assertion, publicKey as KeyObject, { algorithms: ['RS256'], issuer: fake.serviceAccount.client_email, audience: fake.serviceAccount.token_uri })
      if (typeof payload.scope !== 'string' || !payload.scope.split(' ').includes(CLOUD_PLATFORM_SCOPE)) return refuse('Invalid scope.')
      if (typeof payload.iat !== 'number' || typeof payload.exp !== 'number' || payload.exp - payload.iat > 3600) return refuse('Invalid JWT: token lifetime too long.')
    } catch (err) {
      return refuse(`Invalid JWT: ${(err as Error).message}`)
    }
    const token = `ya29.fake-${issued.length + 1}-${randomUUID().slice(0, 8)}`
    tokens.set(token, Date.now() + ttlS * 1000)
    issued.push(token)
    json(res, 200, { access_token: token, expires_in: ttlS, token_type: 'Bearer' })
  }

  /** The bearer check every API call passes first; false when it answered 401. */
  function authorized (rec: VertexRecorded, res: ServerResponse): boolean {
    const h = rec.headers.authorization
    rec.token = typeof h === 'string' && h.startsWith('Bearer ') ? h.slice(7) : ''
    const until = tokens.get(rec.token)
    const why = rec.token === '' ? 'no bearer token' : until === undefined ? 'unknown token' : revoked.has(rec.token) ? 'revoked token' : until <= Date.now() ? 'expired token' : undefined
    if (why === undefined) return true
    rec.refused = why
    googleError(res, 401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.')
    return false
  }

  function inference (rec: VertexRecorded, res: ServerResponse): void {
    const why = checkVertexClaudeBody(rec.body, rec.operation)
    if (why !== undefined) { rec.refused = why; anthropicError(res, why); return }
    const script = queue.shift() ?? fallback
    const reply = typeof script === 'function' ? script(rec) : script
    if ('error' in reply) {
      res.writeHead(reply.error.status, { 'content-type': 'application/json', ...reply.error.headers })
      res.end(JSON.stringify(reply.error.body ?? { error: { code: reply.error.status, message: 'scripted error', status: 'INTERNAL' } }))
      return
    }
    if (rec.operation === 'rawPredict') { json(res, 200, vertexClaudeResponse(reply, rec.model)); return }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' })
    for (const e of vertexClaudeEvents(reply, rec.model)) res.write(e)
    res.end()
  }

  function route (rec: VertexRecorded, res: ServerResponse): void | Promise<void> {
    const path = rec.path.split('?')[0]
    if (rec.method === 'POST' && path === '/token') { rec.operation = 'token'; return tokenEndpoint(rec, res) }
    const g = GEMINI_PATH.exec(path)
    if (rec.method === 'POST' && g !== null) {
      rec.model = decodeURIComponent(g[3])
      rec.operation = g[4] as VertexOperation
      if (!authorized(rec, res)) return
      if (decodeURIComponent(g[1]) !== project || decodeURIComponent(g[2]) !== location) {
        rec.refused = 'project or location'
        return googleError(res, 404, 'NOT_FOUND', `Publisher model not found in ${decodeURIComponent(g[1])}/${decodeURIComponent(g[2])}.`)
      }
      return toGemini(rec, res)
    }
    const m = CLAUDE_PATH.exec(path)
    if (rec.method !== 'POST' || m === null) { rec.operation = 'unknown'; return googleError(res, 404, 'NOT_FOUND', 'The requested URL was not found on this server.') }
    rec.model = decodeURIComponent(m[3])
    rec.operation = rec.model === 'count-tokens' ? 'count-tokens' : m[4] as VertexOperation
    if (rec.operation === 'count-tokens' && m[4] !== 'rawPredict') rec.operation = 'unknown'
    if (!authorized(rec, res)) return
    if (decodeURIComponent(m[1]) !== project || decodeURIComponent(m[2]) !== location) {
      rec.refused = 'project or location'
      return googleError(res, 404, 'NOT_FOUND', `Publisher model not found in ${decodeURIComponent(m[1])}/${decodeURIComponent(m[2])}.`)
    }
    if (rec.operation === 'count-tokens') {
      const why = checkVertexClaudeBody(rec.body, 'count-tokens')
      if (why !== undefined) { rec.refused = why; return anthropicError(res, why) }
      const n = opts.countTokens ?? Math.ceil(JSON.stringify((rec.body as { messages: unknown }).messages).length / 4)
      return json(res, 200, { input_tokens: n })
    }
    inference(rec, res)
  }

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      let body: unknown = text
      try { body = JSON.parse(text) } catch { /* keep text */ }
      const rec: VertexRecorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, text, operation: 'unknown', model: '', token: '' }
      fake.requests.push(rec)
      Promise.resolve(route(rec, res)).catch(() => res.destroy())
    })
  })
  server.on('connection', s => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  fake.origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  fake.serviceAccount.token_uri = `${fake.origin}/token`
  return fake
}
