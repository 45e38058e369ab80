/**
 * @module testing/bedrock-conformance – Amazon Bedrock Runtime's wire for the provider conformance
 * suite (`ConformanceWire`): the suite's golden messages-protocol answers and streams become
 * Converse JSON and ConverseStream event-stream frames, and each Converse request the fake upstream
 * receives (its SigV4 signature or Bedrock API key verified, its body checked as Bedrock checks it)
 * is read back as the messages body the golden cases are written against.
 */
import { randomUUID } from 'node:crypto'
import type { SseEvent } from '../core/dispatch/provider.ts'
import type { Recorded } from './fake-upstream.ts'
import type { ConformanceWire, WireReply } from './conformance-rig.ts'
import { bedrockEventFrame, bedrockExceptionFrame, BEDROCK_ERROR_STATUS } from './bedrock-wire.ts'
import { checkConverseRequest, isObj } from './bedrock-check.ts'
import { BEDROCK_TEST_CREDENTIALS, verifySigV4, type AwsTestCredentials } from './bedrock-sigv4.ts'

type Obj = Record<string, unknown>

export interface BedrockWireOptions {
  /** The region signatures must be scoped to (default us-east-1). */
  region?: string
  /** The SigV4 credentials accepted (default BEDROCK_TEST_CREDENTIALS); null: SigV4 refused. */
  credentials?: AwsTestCredentials | null
  /** A Bedrock API key accepted as `Authorization: Bearer` (default: none). */
  apiKey?: string
}

const ROUTE = /^\/model\/([^/]+)\/(converse|converse-stream)$/

const MEDIA_TYPES: Readonly<Record<string, string>> = {
  pdf: 'application/pdf', txt: 'text/plain', csv: 'text/csv', html: 'text/html', md: 'text/markdown', doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
}

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : [])

/** A cachePoint → the `cache_control` it stands for. */
function cacheControl (point: unknown): Obj {
  const p = isObj(point) ? point : {}
  return typeof p.ttl === 'string' ? { type: 'ephemeral', ttl: p.ttl } : { type: 'ephemeral' }
}

/** Converse content blocks → messages blocks, a cachePoint becoming the `cache_control` of the block before it. */
function blocks (content: unknown): Obj[] {
  const out: Obj[] = []
  for (const b of list(content)) {
    if (!isObj(b)) continue
    if ('cachePoint' in b) {
      const prev = out[out.length - 1]
      if (prev !== undefined) prev.cache_control = cacheControl(b.cachePoint)
      continue
    }
    if (typeof b.text === 'string') out.push({ type: 'text', text: b.text })
    else if (isObj(b.image)) {
      const src = isObj(b.image.source) ? b.image.source : {}
      out.push({ type: 'image', source: { type: 'base64', media_type: `image/${String(b.image.format)}`, data: src.bytes } })
    } else if (isObj(b.document)) {
      const src = isObj(b.document.source) ? b.document.source : {}
      out.push({ type: 'document', source: { type: 'base64', media_type: MEDIA_TYPES[String(b.document.format)] ?? String(b.document.format), data: src.bytes }, title: b.document.name })
    } else if (isObj(b.toolUse)) {
      out.push({ type: 'tool_use', id: b.toolUse.toolUseId, name: b.toolUse.name, input: b.toolUse.input })
    } else if (isObj(b.toolResult)) {
      const r: Obj = { type: 'tool_result', tool_use_id: b.toolResult.toolUseId, content: collapse(blocks(b.toolResult.content)) }
      if (b.toolResult.status === 'error') r.is_error = true
      out.push(r)
    } else if (isObj(b.reasoningContent)) {
      const rc = b.reasoningContent
      if (typeof rc.redactedContent === 'string') out.push({ type: 'redacted_thinking', data: rc.redactedContent })
      else {
        const t = isObj(rc.reasoningText) ? rc.reasoningText : {}
        const thinking: Obj = { type: 'thinking', thinking: t.text }
        if (typeof t.signature === 'string') thinking.signature = t.signature
        out.push(thinking)
      }
    } else out.push({ type: `unknown:${Object.keys(b).join(',')}` })
  }
  return out
}

/** One plain text block is the string form (as the golden cases write a plain turn); anything else stays blocks. */
function collapse (bs: Obj[]): string | Obj[] {
  return bs.length === 1 && bs[0].type === 'text' && bs[0].cache_control === undefined ? String(bs[0].text) : bs
}

/** A Converse request body → the messages body it carries (`model` and `stream` from the path). */
export function messagesFromConverse (body: Obj, model: string, stream: boolean): Obj {
  const out: Obj = { model }
  const system = blocks(body.system)
  if (system.length > 0) out.system = collapse(system)
  out.messages = list(body.messages).map(m => ({ role: isObj(m) ? m.role : undefined, content: collapse(blocks(isObj(m) ? m.content : [])) }))
  const inf = isObj(body.inferenceConfig) ? body.inferenceConfig : {}
  if (inf.maxTokens !== undefined) out.max_tokens = inf.maxTokens
  if (inf.temperature !== undefined) out.temperature = inf.temperature
  if (inf.topP !== undefined) out.top_p = inf.topP
  if (inf.stopSequences !== undefined) out.stop_sequences = inf.stopSequences
  if (isObj(body.toolConfig)) {
    const tools: Obj[] = []
    for (const t of list(body.toolConfig.tools)) {
      if (!isObj(t)) continue
      if ('cachePoint' in t) {
        const prev = tools[tools.length - 1]
        if (prev !== undefined) prev.cache_control = cacheControl(t.cachePoint)
        continue
      }
      const spec = isObj(t.toolSpec) ? t.toolSpec : {}
      const tool: Obj = { name: spec.name, input_schema: isObj(spec.inputSchema) ? spec.inputSchema.json : undefined }
      if (spec.description !== undefined) tool.description = spec.description
      tools.push(tool)
    }
    out.tools = tools
    const c = body.toolConfig.toolChoice
    if (isObj(c)) {
      if ('auto' in c) out.tool_choice = { type: 'auto' }
      else if ('any' in c) out.tool_choice = { type: 'any' }
      else if (isObj(c.tool)) out.tool_choice = { type: 'tool', name: c.tool.name }
    }
  }
  if (isObj(body.outputConfig) && isObj(body.outputConfig.textFormat)) {
    const structure = isObj(body.outputConfig.textFormat.structure) ? body.outputConfig.textFormat.structure : {}
    const js = isObj(structure.jsonSchema) ? structure.jsonSchema : {}
    out.output_config = { format: { type: body.outputConfig.textFormat.type, schema: typeof js.schema === 'string' ? JSON.parse(js.schema) : js.schema } }
  }
  if (isObj(body.additionalModelRequestFields)) Object.assign(out, body.additionalModelRequestFields)
  if (stream) out.stream = true
  return out
}

/** A messages `stop_reason` → the Converse `stopReason` that stands for it (a refusal: a content filter). */
function converseStop (r: unknown): string {
  if (r === 'refusal') return 'content_filtered'
  return typeof r === 'string' ? r : 'end_turn'
}

/** A messages usage object → Converse's (`inputTokens` excluding the cache reads and writes, as Bedrock counts). */
export function converseUsage (u: unknown): Obj {
  const x = isObj(u) ? u : {}
  const n = (v: unknown): number => (typeof v === 'number' ? v : 0)
  const input = n(x.input_tokens)
  const read = n(x.cache_read_input_tokens)
  const write = n(x.cache_creation_input_tokens)
  const output = n(x.output_tokens)
  const out: Obj = { inputTokens: input, outputTokens: output, totalTokens: input + output + read + write }
  if (read > 0) out.cacheReadInputTokens = read
  if (write > 0) out.cacheWriteInputTokens = write
  return out
}

/** A messages answer block → its Converse content block. */
function converseBlock (b: unknown): Obj {
  const x = isObj(b) ? b : {}
  switch (x.type) {
    case 'tool_use': return { toolUse: { toolUseId: x.id, name: x.name, input: x.input } }
    case 'thinking': {
      const t: Obj = { text: x.thinking }
      if (typeof x.signature === 'string' && x.signature !== '') t.signature = x.signature
      return { reasoningContent: { reasoningText: t } }
    }
    case 'redacted_thinking': return { reasoningContent: { redactedContent: x.data } }
    default: return { text: typeof x.text === 'string' ? x.text : '' }
  }
}

const JSON_HEADERS = (): Record<string, string> => ({ 'content-type': 'application/json', 'x-amzn-requestid': randomUUID() })

/** The Bedrock error type an HTTP status of the protocol's error stands for. */
function errorType (status: number): string {
  if (status === 400 || status === 413 || status === 422) return 'ValidationException'
  if (status === 401 || status === 403) return 'UnrecognizedClientException'
  if (status === 404) return 'ResourceNotFoundException'
  if (status === 429) return 'ThrottlingException'
  if (status === 503) return 'ServiceUnavailableException'
  return 'InternalServerException'
}

/**
 * The conformance wire of Amazon Bedrock Runtime's Converse API: pass it as `wire` to
 * `runProviderConformance` for an adapter that speaks Converse (declaring `messages`).
 * @example
 * await runProviderConformance(t, {
 *   adapter: bedrock, wire: bedrockWire(),
 *   config: baseUrl => ({ region: 'us-east-1', baseUrl, credentials: BEDROCK_TEST_CREDENTIALS }),
 * })
 */
export function bedrockWire (opts: BedrockWireOptions = {}): ConformanceWire {
  const region = opts.region ?? 'us-east-1'
  const credentials = opts.credentials === undefined ? { ...BEDROCK_TEST_CREDENTIALS } : opts.credentials
  return {
    async decodeRequest (req: Recorded): Promise<Obj> {
      const route = ROUTE.exec(req.path.split('?')[0])
      if (!route || req.method !== 'POST') throw new Error(`not a Converse route: ${req.method} ${req.path}`)
      const auth = String(req.headers.authorization ?? '')
      if (/^Bearer /i.test(auth)) {
        if (opts.apiKey === undefined || auth.slice(7).trim() !== opts.apiKey) throw new Error('UnrecognizedClientException: the Bedrock API key is not the one configured')
      } else {
        if (credentials === null) throw new Error('SigV4 is refused here')
        const failure = await verifySigV4({ method: req.method, url: req.path, headers: req.headers }, Buffer.from(req.text), credentials, region)
        if (failure) throw new Error(`${failure.type}: ${failure.message}`)
      }
      let body: unknown
      try { body = JSON.parse(req.text) } catch { throw new Error('SerializationException: the body is not JSON') }
      const invalid = checkConverseRequest(body)
      if (invalid !== undefined) throw new Error(`ValidationException: ${invalid}`)
      return messagesFromConverse(body as Obj, decodeURIComponent(route[1]), route[2] === 'converse-stream')
    },

    encodeAnswer (answer: Obj): WireReply {
      const body: Obj = {
        output: { message: { role: 'assistant', content: list(answer.content).map(converseBlock) } },
        stopReason: converseStop(answer.stop_reason),
        usage: converseUsage(answer.usage),
        metrics: { latencyMs: 100 },
      }
      if (typeof answer.stop_sequence === 'string') body.additionalModelResponseFields = { stop_sequence: answer.stop_sequence }
      return { status: 200, headers: JSON_HEADERS(), body: JSON.stringify(body) }
    },

    encodeStream (events: readonly SseEvent[]) {
      const chunks = events.map((ev): Uint8Array[] => {
        let d: Obj = {}
        try { const parsed: unknown = JSON.parse(ev.data); if (isObj(parsed)) d = parsed } catch { return [] }
        const i = typeof d.index === 'number' ? d.index : 0
        const delta = (x: Obj) => [bedrockEventFrame('contentBlockDelta', { contentBlockIndex: i, delta: x })]
        switch (ev.event ?? d.type) {
          case 'message_start': return [bedrockEventFrame('messageStart', { role: 'assistant' })]
          case 'content_block_start': {
            const b = isObj(d.content_block) ? d.content_block : {}
            // Converse opens only a tool use with a start event; a text or reasoning block opens with its first delta.
            if (b.type === 'tool_use') return [bedrockEventFrame('contentBlockStart', { contentBlockIndex: i, start: { toolUse: { toolUseId: b.id, name: b.name } } })]
            if (b.type === 'redacted_thinking') return delta({ reasoningContent: { redactedContent: b.data } })
            if (b.type === 'thinking' && typeof b.thinking === 'string' && b.thinking !== '') return delta({ reasoningContent: { text: b.thinking } })
            if (b.type === 'text' && typeof b.text === 'string' && b.text !== '') return delta({ text: b.text })
            return []
          }
          case 'content_block_delta': {
            const x = isObj(d.delta) ? d.delta : {}
            if (x.type === 'text_delta') return delta({ text: x.text })
            if (x.type === 'input_json_delta') return delta({ toolUse: { input: x.partial_json } })
            if (x.type === 'thinking_delta') return delta({ reasoningContent: { text: x.thinking } })
            if (x.type === 'signature_delta') return delta({ reasoningContent: { signature: x.signature } })
            return []
          }
          case 'content_block_stop': return [bedrockEventFrame('contentBlockStop', { contentBlockIndex: i })]
          case 'message_delta': {
            const x = isObj(d.delta) ? d.delta : {}
            const stop: Obj = { stopReason: converseStop(x.stop_reason) }
            if (typeof x.stop_sequence === 'string') stop.additionalModelResponseFields = { stop_sequence: x.stop_sequence }
            // Bedrock sends the usage in a metadata event after messageStop.
            return [bedrockEventFrame('messageStop', stop), bedrockEventFrame('metadata', { usage: converseUsage(d.usage), metrics: { latencyMs: 100 } })]
          }
          case 'error': return [bedrockExceptionFrame('internalServerException', 'the model failed')]
          default: return []
        }
      })
      return { headers: { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': randomUUID() }, chunks }
    },

    encodeError (status: number, body: unknown): WireReply {
      const type = errorType(status)
      const e = isObj(body) && isObj(body.error) ? body.error : {}
      const message = typeof e.message === 'string' ? e.message : type
      return {
        status: BEDROCK_ERROR_STATUS[type] ?? status,
        headers: { ...JSON_HEADERS(), 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/` },
        body: JSON.stringify({ message }),
      }
    },
  }
}
