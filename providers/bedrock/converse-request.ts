/**
 * @module providers/bedrock/converse-request – a messages-protocol request → a Bedrock Converse
 * request (the body of `/converse`, `/converse-stream`, and the `converse` input of
 * `/count-tokens`).
 *
 * What maps to what: `system` → `system[].text`; text, base64 images and documents, `tool_use`,
 * `tool_result`, `thinking` and `redacted_thinking` blocks → Converse content blocks
 * (`text`, `image`, `document`, `toolUse`, `toolResult`, `reasoningContent`); `cache_control` on a
 * block, a system block or a tool → a `cachePoint` after it (its `ttl` of 5m or 1h kept);
 * `tools` → `toolConfig.tools[].toolSpec`; `tool_choice` auto/any/tool → `toolConfig.toolChoice`
 * (none: the tools are left out, Converse has no "none"; a conversation with tool calls keeps them
 * without a choice, as Converse requires; a conversation with tool calls and no tools gets a spec
 * per tool name it called); `max_tokens`, `temperature`, `top_p`, `stop_sequences` →
 * `inferenceConfig`; `output_config` (a json_schema format, effort) → `outputConfig`; `top_k` and
 * `thinking` → `additionalModelRequestFields` (the Anthropic model family's own fields). A `system`
 * turn inside `messages` moves to the end of `system`; consecutive turns of one role are joined
 * (Converse wants the roles to alternate).
 * Refused with 400 (Converse takes images as bytes): an image or a document by URL, a server tool,
 * an output format other than json_schema.
 */
import { gwError, withoutCarriedThinking } from '../../index.ts'

type Obj = Record<string, unknown>

function isObj (v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function bad (message: string): never {
  throw gwError('GW_ERR_BAD_REQUEST', [message])
}

const IMAGE_FORMATS: Readonly<Record<string, string>> = { 'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/png': 'png', 'image/gif': 'gif', 'image/webp': 'webp' }
const DOCUMENT_FORMATS: Readonly<Record<string, string>> = {
  'application/pdf': 'pdf', 'text/plain': 'txt', 'text/csv': 'csv', 'text/html': 'html', 'text/markdown': 'md',
  'application/msword': 'doc', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-excel': 'xls', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
}

/** The cachePoint for a block's `cache_control`; its `ttl` passes when Converse knows it (5m, 1h). */
function cachePoint (b: Obj): Obj {
  const ttl = isObj(b.cache_control) ? b.cache_control.ttl : undefined
  return { cachePoint: ttl === '5m' || ttl === '1h' ? { type: 'default', ttl } : { type: 'default' } }
}

function hasCacheControl (b: Obj): boolean {
  return isObj(b.cache_control)
}

/** An image block's base64 source → Converse `image` (bytes as base64, as the JSON wire carries them). */
function image (b: Obj, where: string): Obj {
  const src = isObj(b.source) ? b.source : undefined
  if (src?.type === 'url') bad(`${where}: images by URL cannot be sent to this model; send the image as base64 data`)
  if (src?.type !== 'base64' || typeof src.data !== 'string') bad(`${where}: an image needs a base64 source`)
  const format = IMAGE_FORMATS[String(src.media_type).toLowerCase()]
  if (format === undefined) bad(`${where}: "${String(src.media_type)}" images cannot be sent to this model (JPEG, PNG, GIF and WebP can)`)
  return { image: { format, source: { bytes: src.data } } }
}

function document (b: Obj, where: string): Obj {
  const src = isObj(b.source) ? b.source : undefined
  if (src?.type === 'text' && typeof src.data === 'string') {
    return { document: { format: 'txt', name: docName(b, where), source: { bytes: Buffer.from(src.data).toString('base64') } } }
  }
  if (src?.type !== 'base64' || typeof src.data !== 'string') bad(`${where}: a document needs a base64 or text source (documents by URL cannot be sent to this model)`)
  const format = DOCUMENT_FORMATS[String(src.media_type).toLowerCase()]
  if (format === undefined) bad(`${where}: "${String(src.media_type)}" documents cannot be sent to this model`)
  return { document: { format, name: docName(b, where), source: { bytes: src.data } } }
}

/** Converse requires a document name (letters, digits, spaces, hyphens, brackets). */
function docName (b: Obj, where: string): string {
  const title = typeof b.title === 'string' ? b.title.replace(/[^A-Za-z0-9 ()[\]-]/g, ' ').replace(/\s+/g, ' ').trim() : ''
  return title !== '' ? title.slice(0, 200) : where.replace(/[^A-Za-z0-9]+/g, '-')
}

/** A tool result's content → Converse `toolResult.content` (text, images, documents; JSON as text). */
function toolResultContent (content: unknown, where: string): Obj[] {
  if (content === undefined || content === null) return []
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }]
  if (!Array.isArray(content)) bad(`${where}: tool_result content must be a string or a list of blocks`)
  const out: Obj[] = []
  content.forEach((b: unknown, i) => {
    if (!isObj(b)) bad(`${where}.content.${i}: a block must be an object`)
    if (b.type === 'text') out.push({ text: String(b.text ?? '') })
    else if (b.type === 'image') out.push(image(b, `${where}.content.${i}`))
    else if (b.type === 'document') out.push(document(b, `${where}.content.${i}`))
    else bad(`${where}.content.${i}: "${String(b.type)}" blocks cannot be sent to this model in a tool result`)
  })
  return out
}

/** One messages content block → Converse content blocks (its cache point after it). */
function block (b: unknown, where: string): Obj[] {
  if (!isObj(b)) bad(`${where}: a content block must be an object`)
  let out: Obj
  switch (b.type) {
    case 'text':
      if (typeof b.text !== 'string') bad(`${where}: a text block needs text`)
      if (b.text === '') return hasCacheControl(b) ? [cachePoint(b)] : []
      out = { text: b.text }
      break
    case 'image': out = image(b, where); break
    case 'document': out = document(b, where); break
    case 'tool_use':
      out = { toolUse: { toolUseId: String(b.id), name: String(b.name), input: isObj(b.input) ? b.input : {} } }
      break
    case 'tool_result': {
      const r: Obj = { toolUseId: String(b.tool_use_id), content: toolResultContent(b.content, where) }
      if (b.is_error === true) r.status = 'error'
      out = { toolResult: r }
      break
    }
    case 'thinking': {
      const text: Obj = { text: typeof b.thinking === 'string' ? b.thinking : '' }
      if (typeof b.signature === 'string' && b.signature !== '') text.signature = b.signature
      out = { reasoningContent: { reasoningText: text } }
      break
    }
    case 'redacted_thinking':
      out = { reasoningContent: { redactedContent: String(b.data ?? '') } }
      break
    default:
      bad(`${where}: "${String(b.type)}" blocks cannot be sent to this model`)
  }
  return hasCacheControl(b) ? [out, cachePoint(b)] : [out]
}

function content (c: unknown, where: string): Obj[] {
  if (typeof c === 'string') return c === '' ? [] : [{ text: c }]
  if (!Array.isArray(c)) bad(`${where}: content must be a string or a list of blocks`)
  return c.flatMap((b, i) => block(b, `${where}.${i}`))
}

/** `system` (a string or text blocks) → Converse system blocks. */
function system (s: unknown, where: string): Obj[] {
  if (s === undefined || s === null) return []
  if (typeof s === 'string') return s === '' ? [] : [{ text: s }]
  if (!Array.isArray(s)) bad(`${where}: system must be a string or a list of text blocks`)
  return s.flatMap((b: unknown, i) => {
    if (!isObj(b) || b.type !== 'text' || typeof b.text !== 'string') bad(`${where}.${i}: system blocks must be text`)
    const out: Obj[] = b.text === '' ? [] : [{ text: b.text }]
    if (hasCacheControl(b)) out.push(cachePoint(b))
    return out
  })
}

function toolConfig (tools: unknown, choice: unknown): Obj | undefined {
  if (tools === undefined || tools === null) return undefined
  if (!Array.isArray(tools)) bad('tools must be a list')
  if (tools.length === 0) return undefined
  const specs: Obj[] = []
  tools.forEach((t: unknown, i) => {
    if (!isObj(t)) bad(`tools.${i}: a tool must be an object`)
    if (t.type !== undefined && t.type !== 'custom') bad(`tools.${i}: server tools ("${String(t.type)}") cannot be used with this model`)
    if (typeof t.name !== 'string' || t.name === '') bad(`tools.${i}: a tool needs a name`)
    const spec: Obj = { name: t.name, inputSchema: { json: isObj(t.input_schema) ? t.input_schema : { type: 'object' } } }
    if (typeof t.description === 'string' && t.description !== '') spec.description = t.description
    specs.push({ toolSpec: spec })
    if (hasCacheControl(t)) specs.push(cachePoint(t))
  })
  const out: Obj = { tools: specs }
  if (isObj(choice)) {
    if (choice.type === 'auto') out.toolChoice = { auto: {} }
    else if (choice.type === 'any') out.toolChoice = { any: {} }
    else if (choice.type === 'tool') out.toolChoice = { tool: { name: String(choice.name) } }
  }
  return out
}

/**
 * Tool specs for a conversation that holds tool calls but names no tools (the messages API takes
 * it, Converse refuses it without a tool config): one spec per tool name called in the history,
 * with an open input schema, so the history is sent as it is.
 */
function historyTools (messages: readonly Obj[]): Obj[] {
  const names = new Set<string>()
  for (const m of messages) for (const b of m.content as Obj[]) if (isObj(b.toolUse)) names.add(String(b.toolUse.name))
  if (names.size === 0) names.add('tool')
  return [...names].map(name => ({ toolSpec: { name, inputSchema: { json: { type: 'object' } } } }))
}

/** The Converse request body for a messages-protocol body (the model goes in the path, not here). */
export function converseRequest (given: Readonly<Obj>, forCount = false): Obj {
  // Thinking another vendor signed is no Bedrock reasoning signature: dropped before conversion.
  const body = withoutCarriedThinking(given)
  const sys = system(body.system, 'system')
  const messages: Obj[] = []
  const turns = body.messages
  if (!Array.isArray(turns)) bad('messages must be a list')
  turns.forEach((m: unknown, i) => {
    if (!isObj(m)) bad(`messages.${i}: a message must be an object`)
    if (m.role === 'system') { sys.push(...system(m.content, `messages.${i}.content`)); return }
    if (m.role !== 'user' && m.role !== 'assistant') bad(`messages.${i}: role must be user or assistant`)
    const blocks = content(m.content, `messages.${i}.content`)
    // Converse wants the roles to alternate; consecutive turns of one role are one turn (as the messages API reads them).
    const last = messages[messages.length - 1]
    if (last !== undefined && last.role === m.role) (last.content as Obj[]).push(...blocks)
    else messages.push({ role: m.role, content: blocks })
  })
  const out: Obj = { messages }
  if (sys.length > 0) out.system = sys
  const tools = toolConfig(body.tools, body.tool_choice)
  // Converse has no tool choice "none": the tools are left out, unless the conversation holds tool
  // calls or results (Converse then needs the tool config; the model may call a tool again).
  const none = isObj(body.tool_choice) && body.tool_choice.type === 'none'
  const toolTurns = messages.some(m => (m.content as Obj[]).some(b => 'toolUse' in b || 'toolResult' in b))
  if (tools !== undefined && (!none || toolTurns)) out.toolConfig = tools
  else if (tools === undefined && toolTurns) out.toolConfig = { tools: historyTools(messages) }
  const additional: Obj = {}
  if (isObj(body.thinking)) additional.thinking = body.thinking
  if (forCount) {
    if (Object.keys(additional).length > 0) out.additionalModelRequestFields = additional
    return out
  }
  const inference: Obj = {}
  if (typeof body.max_tokens === 'number') inference.maxTokens = body.max_tokens
  if (typeof body.temperature === 'number') inference.temperature = body.temperature
  if (typeof body.top_p === 'number') inference.topP = body.top_p
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) inference.stopSequences = body.stop_sequences
  if (Object.keys(inference).length > 0) out.inferenceConfig = inference
  if (typeof body.top_k === 'number') additional.top_k = body.top_k
  if (Object.keys(additional).length > 0) out.additionalModelRequestFields = additional
  const output = outputConfig(body.output_config)
  if (output !== undefined) out.outputConfig = output
  return out
}

/**
 * `output_config` → Converse `outputConfig`: a `json_schema` format becomes `textFormat` (the schema
 * as a JSON string, as Converse takes it), `effort` passes. Another format is refused with 400.
 */
function outputConfig (c: unknown): Obj | undefined {
  if (!isObj(c)) return undefined
  const out: Obj = {}
  if (typeof c.effort === 'string') out.effort = c.effort
  if (isObj(c.format)) {
    if (c.format.type !== 'json_schema' || !isObj(c.format.schema)) bad('output_config.format: only a json_schema format with a schema can be sent to this model')
    out.textFormat = { type: 'json_schema', structure: { jsonSchema: { schema: JSON.stringify(c.format.schema) } } }
  }
  return Object.keys(out).length > 0 ? out : undefined
}
