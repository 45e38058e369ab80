/**
 * @module providers/gemini/request – a messages-protocol request → a Gemini
 * `GenerateContentRequest` (the body of `:generateContent` and `:streamGenerateContent`, and what
 * `:countTokens` counts).
 *
 * What maps to what: `system` (and `system` turns inside `messages`) → `systemInstruction`; turns
 * → `contents` (`assistant` → role `model`, consecutive turns of one role joined); text →
 * `text`; base64 images and documents → `inlineData`; images and documents by URL → `fileData`;
 * `tool_use` → `functionCall`; `tool_result` → `functionResponse` (`{output}`, or `{error}` when
 * `is_error`; the function's name from the call it answers; images in it follow as `inlineData`);
 * a thinking block carrying a Gemini thought signature (signatures.ts) → `thoughtSignature` back
 * on the part it came on (its text, when it had any, as a `thought` part); with
 * `signatureFallback`, a turn's first function call still without one gets Gemini's placeholder
 * (SIGNATURE_PLACEHOLDER); other thinking and redacted thinking (another vendor's) are left out. `tools` → one `functionDeclarations` tool
 * with each schema as `parametersJsonSchema` (JSON Schema as the client sent it, `$schema` left
 * out); `tool_choice` auto/any/tool/none → `toolConfig.functionCallingConfig` AUTO/ANY
 * (+ `allowedFunctionNames`)/NONE. `max_tokens` → `generationConfig.maxOutputTokens`,
 * `stop_sequences` → `stopSequences` (Gemini takes at most 5), `temperature`/`top_p`/`top_k` →
 * `temperature`/`topP`/`topK` only when `sampling` allows them, `output_config.format` (or
 * `output_format`) `json_schema` → `responseMimeType: application/json` + `responseJsonSchema`
 * (`json_object`, chat's JSON mode: the MIME type alone),
 * `thinking` enabled → `thinkingConfig { thinkingBudget, includeThoughts: true }`, adaptive →
 * `{ includeThoughts: true }` (the model's own budget), disabled → nothing (the model's default:
 * Gemini 2.5 Pro and Gemini 3 models cannot turn thinking off). Ignored: `cache_control`,
 * `metadata`, `service_tier`, `context_management`. Refused with 400: server tools, more than 5
 * stop sequences, a tool result whose call is not in the conversation.
 */
import { gwError } from '../../index.ts'
import { decodeSignature, type CarriedSignature } from './signatures.ts'

type Obj = Record<string, unknown>

export function isObj (v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function bad (message: string): never {
  throw gwError('GW_ERR_BAD_REQUEST', [message])
}

/** Gemini's own cap on `stopSequences`. */
const MAX_STOP_SEQUENCES = 5

/** How a messages body becomes a Gemini body. */
export interface GeminiRequestOptions {
  /** Send `temperature`, `topP` and `topK` (the newest models refuse them): see the provider's `sampling`. */
  sampling: boolean
  /**
   * A model turn's first function call that comes back without its thought signature gets
   * SIGNATURE_PLACEHOLDER (Gemini's documented way to skip the check), instead of Gemini 3's 400.
   */
  signatureFallback?: boolean
}

/** The value Gemini documents for a function call whose signature is unknown (history from elsewhere). */
export const SIGNATURE_PLACEHOLDER = 'skip_thought_signature_validator'

/** A Gemini content part. */
type Part = Obj

const EXT_TYPES: Readonly<Record<string, string>> = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', heic: 'image/heic', heif: 'image/heif', pdf: 'application/pdf',
}

/** The media type of a file by URL, from its extension; `fallback` when it has none known. */
function typeOfUrl (url: string, fallback: string): string {
  const m = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)
  return (m ? EXT_TYPES[m[1].toLowerCase()] : undefined) ?? fallback
}

/** An image or document block → `inlineData` (base64) or `fileData` (URL); text documents → text. */
function mediaPart (b: Obj, where: string): Part {
  const src = isObj(b.source) ? b.source : undefined
  const fallback = b.type === 'document' ? 'application/pdf' : 'image/jpeg'
  if (src?.type === 'base64' && typeof src.data === 'string') {
    return { inlineData: { mimeType: typeof src.media_type === 'string' ? src.media_type : fallback, data: src.data } }
  }
  if (src?.type === 'url' && typeof src.url === 'string') return { fileData: { mimeType: typeOfUrl(src.url, fallback), fileUri: src.url } }
  if (b.type === 'document' && src?.type === 'text' && typeof src.data === 'string') return { text: src.data }
  bad(`${where}: a ${String(b.type)} needs a base64 or URL source`)
}

/** A tool result's content → the `functionResponse.response` text, and any media parts that follow it. */
function toolResultParts (content: unknown, where: string): { text: string, media: Part[] } {
  if (content === undefined || content === null) return { text: '', media: [] }
  if (typeof content === 'string') return { text: content, media: [] }
  if (!Array.isArray(content)) bad(`${where}: tool_result content must be a string or a list of blocks`)
  const texts: string[] = []
  const media: Part[] = []
  content.forEach((b: unknown, i) => {
    if (!isObj(b)) bad(`${where}.content.${i}: a block must be an object`)
    if (b.type === 'text') texts.push(String(b.text ?? ''))
    else if (b.type === 'image' || b.type === 'document') media.push(mediaPart(b, `${where}.content.${i}`))
    else bad(`${where}.content.${i}: "${String(b.type)}" blocks cannot be sent to this model in a tool result`)
  })
  return { text: texts.join('\n'), media }
}

/** One assistant turn → model parts, thought signatures put back on the parts they came on. */
function modelParts (blocks: unknown[], where: string, fallback: boolean): Part[] {
  const parts: Part[] = []
  const callParts = new Map<string, Part>()
  const loose: CarriedSignature[] = []
  blocks.forEach((b, i) => {
    if (!isObj(b)) bad(`${where}.${i}: a content block must be an object`)
    switch (b.type) {
      case 'text':
        if (typeof b.text !== 'string') bad(`${where}.${i}: a text block needs text`)
        if (b.text !== '') parts.push({ text: b.text })
        return
      case 'tool_use': {
        const p: Part = { functionCall: { name: String(b.name), args: isObj(b.input) ? b.input : {} } }
        callParts.set(String(b.id), p)
        parts.push(p)
        return
      }
      case 'thinking': {
        const carried = decodeSignature(b.signature)
        if (carried === undefined) return // another vendor's reasoning: Gemini cannot read it
        if (carried.call !== undefined) {
          // Its call may come later in the turn (thinking blocks lead their turn): placed below.
          loose.push(carried)
          return
        }
        const text = typeof b.thinking === 'string' ? b.thinking : ''
        if (text !== '') parts.push({ text, thought: true, thoughtSignature: carried.signature })
        else loose.push(carried)
        return
      }
      case 'redacted_thinking':
        return
      case 'image': case 'document':
        parts.push(mediaPart(b, `${where}.${i}`))
        return
      default:
        bad(`${where}.${i}: "${String(b.type)}" blocks cannot be sent to this model`)
    }
  })
  for (const c of loose) {
    const target = c.call !== undefined
      ? callParts.get(c.call)
      : [...parts].reverse().find(p => typeof p.text === 'string' && p.thought !== true) ?? parts[parts.length - 1]
    if (target !== undefined && target.thoughtSignature === undefined) target.thoughtSignature = c.signature
  }
  if (fallback) {
    const first = parts.find(p => p.functionCall !== undefined)
    if (first !== undefined && first.thoughtSignature === undefined) first.thoughtSignature = SIGNATURE_PLACEHOLDER
  }
  return parts
}

/** One user turn → user parts; `names` maps tool_use ids seen so far to their function names. */
function userParts (blocks: unknown[], where: string, names: ReadonlyMap<string, string>): Part[] {
  const parts: Part[] = []
  const after: Part[] = []
  blocks.forEach((b, i) => {
    if (!isObj(b)) bad(`${where}.${i}: a content block must be an object`)
    switch (b.type) {
      case 'text':
        if (typeof b.text !== 'string') bad(`${where}.${i}: a text block needs text`)
        if (b.text !== '') after.push({ text: b.text })
        return
      case 'image': case 'document':
        after.push(mediaPart(b, `${where}.${i}`))
        return
      case 'tool_result': {
        const name = names.get(String(b.tool_use_id))
        if (name === undefined) bad(`${where}.${i}: tool_result for "${String(b.tool_use_id)}", a tool_use this conversation does not hold`)
        const { text, media } = toolResultParts(b.content, `${where}.${i}`)
        // Function responses lead their turn, in the order of the calls they answer.
        parts.push({ functionResponse: { name, response: b.is_error === true ? { error: text } : { output: text } } })
        after.push(...media)
        return
      }
      case 'thinking': case 'redacted_thinking':
        return
      default:
        bad(`${where}.${i}: "${String(b.type)}" blocks cannot be sent to this model`)
    }
  })
  return [...parts, ...after]
}

/** `system` (a string or text blocks) → text parts. */
function systemParts (s: unknown, where: string): Part[] {
  if (s === undefined || s === null) return []
  if (typeof s === 'string') return s === '' ? [] : [{ text: s }]
  if (!Array.isArray(s)) bad(`${where}: system must be a string or a list of text blocks`)
  return s.flatMap((b: unknown, i) => {
    if (!isObj(b) || b.type !== 'text' || typeof b.text !== 'string') bad(`${where}.${i}: system blocks must be text`)
    return b.text === '' ? [] : [{ text: b.text }]
  })
}

function blocksOf (c: unknown, where: string): unknown[] {
  if (typeof c === 'string') return c === '' ? [] : [{ type: 'text', text: c }]
  if (!Array.isArray(c)) bad(`${where}: content must be a string or a list of blocks`)
  return c
}

/** `tools` → one `functionDeclarations` tool (undefined when there are none). */
function tools (list: unknown): Obj[] | undefined {
  if (list === undefined || list === null) return undefined
  if (!Array.isArray(list)) bad('tools must be a list')
  const decls: Obj[] = list.map((t: unknown, i) => {
    if (!isObj(t)) bad(`tools.${i}: a tool must be an object`)
    if (t.type !== undefined && t.type !== 'custom') bad(`tools.${i}: server tools ("${String(t.type)}") cannot be used with this model`)
    if (typeof t.name !== 'string' || t.name === '') bad(`tools.${i}: a tool needs a name`)
    const d: Obj = { name: t.name }
    if (typeof t.description === 'string' && t.description !== '') d.description = t.description
    if (isObj(t.input_schema)) {
      // The JSON Schema dialect marker is the client's bookkeeping, not part of the schema Gemini reads.
      const { $schema: _dialect, ...schema } = t.input_schema
      d.parametersJsonSchema = schema
    }
    return d
  })
  return decls.length > 0 ? [{ functionDeclarations: decls }] : undefined
}

function toolConfig (choice: unknown): Obj | undefined {
  if (!isObj(choice)) return undefined
  switch (choice.type) {
    case 'auto': return { functionCallingConfig: { mode: 'AUTO' } }
    case 'any': return { functionCallingConfig: { mode: 'ANY' } }
    case 'none': return { functionCallingConfig: { mode: 'NONE' } }
    case 'tool': return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [String(choice.name)] } }
    default: return undefined
  }
}

/** `thinking` → `thinkingConfig` (undefined: the model's default). */
function thinkingConfig (thinking: unknown): Obj | undefined {
  if (!isObj(thinking)) return undefined
  if (thinking.type === 'enabled') {
    return typeof thinking.budget_tokens === 'number' ? { thinkingBudget: thinking.budget_tokens, includeThoughts: true } : { includeThoughts: true }
  }
  if (thinking.type === 'adaptive') return { includeThoughts: true }
  return undefined
}

/**
 * The answer's format (`output_config.format`, or the older `output_format`): a JSON schema, JSON
 * without one (`json_object`, chat's JSON mode), or undefined for text.
 */
function outputFormat (body: Readonly<Obj>): { schema?: Obj } | undefined {
  const f = isObj(body.output_config) && isObj(body.output_config.format) ? body.output_config.format : isObj(body.output_format) ? body.output_format : undefined
  if (f?.type === 'json_schema' && isObj(f.schema)) return { schema: f.schema }
  return f?.type === 'json_object' ? {} : undefined
}

/** The prompt part of a Gemini body: contents, system instruction, tools (what a count counts). */
export function geminiPrompt (body: Readonly<Obj>, signatureFallback = false): Obj {
  const sys = systemParts(body.system, 'system')
  const turns = body.messages
  if (!Array.isArray(turns)) bad('messages must be a list')
  const contents: Array<{ role: string, parts: Part[] }> = []
  const names = new Map<string, string>()
  turns.forEach((m: unknown, i) => {
    if (!isObj(m)) bad(`messages.${i}: a message must be an object`)
    const where = `messages.${i}.content`
    if (m.role === 'system') { sys.push(...systemParts(m.content, where)); return }
    if (m.role !== 'user' && m.role !== 'assistant') bad(`messages.${i}: role must be user or assistant`)
    const blocks = blocksOf(m.content, where)
    for (const b of blocks) if (isObj(b) && b.type === 'tool_use') names.set(String(b.id), String(b.name))
    const parts = m.role === 'assistant' ? modelParts(blocks, where, signatureFallback) : userParts(blocks, where, names)
    if (parts.length === 0) return
    const role = m.role === 'assistant' ? 'model' : 'user'
    const last = contents[contents.length - 1]
    if (last !== undefined && last.role === role) last.parts.push(...parts)
    else contents.push({ role, parts })
  })
  if (contents.length === 0) bad('messages: at least one message with content is needed')
  const out: Obj = { contents }
  if (sys.length > 0) out.systemInstruction = { parts: sys }
  const t = tools(body.tools)
  if (t !== undefined) {
    out.tools = t
    const tc = toolConfig(body.tool_choice)
    if (tc !== undefined) out.toolConfig = tc
  }
  return out
}

/** The Gemini body for a messages-protocol body (the model goes in the path, not here). */
export function geminiRequest (body: Readonly<Obj>, opts: GeminiRequestOptions): Obj {
  const out = geminiPrompt(body, opts.signatureFallback === true)
  const gen: Obj = {}
  if (typeof body.max_tokens === 'number') gen.maxOutputTokens = body.max_tokens
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) {
    if (body.stop_sequences.length > MAX_STOP_SEQUENCES) bad(`stop_sequences: this model takes at most ${MAX_STOP_SEQUENCES}`)
    gen.stopSequences = body.stop_sequences
  }
  if (opts.sampling) {
    if (typeof body.temperature === 'number') gen.temperature = body.temperature
    if (typeof body.top_p === 'number') gen.topP = body.top_p
    if (typeof body.top_k === 'number') gen.topK = body.top_k
  }
  const format = outputFormat(body)
  if (format !== undefined) {
    gen.responseMimeType = 'application/json'
    if (format.schema !== undefined) gen.responseJsonSchema = format.schema
  }
  const thinking = thinkingConfig(body.thinking)
  if (thinking !== undefined) gen.thinkingConfig = thinking
  if (Object.keys(gen).length > 0) out.generationConfig = gen
  return out
}
