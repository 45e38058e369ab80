/**
 * @module tokens/local-count – local input-token counts for `POST /v1/messages/count_tokens` when no
 * messages-protocol upstream can count them: real OpenAI tokenizers (js-tiktoken's tables, see
 * tokenizer.ts), documented approximations for everything else.
 */
import { countSampled, encodingFor, tokenCounter, type TokenCounter } from './tokenizer.ts'

export { encodingFor, type EncodingName } from './tokenizer.ts'

/** Tokens one image costs, whatever its size (Anthropic's cost of a ~1.15 megapixel image). */
export const IMAGE_TOKENS = 1600
/** Tokens a document block with binary content (PDF) costs: no page count is known here. */
export const DOCUMENT_TOKENS = 1600
/** Framing per message (role and separators), as OpenAI counts chat messages. */
export const MESSAGE_OVERHEAD = 3
/** Framing per tool definition. */
export const TOOL_OVERHEAD = 8
/**
 * Characters tokenized per local count, at most (about 40 ms of the event loop for the slowest
 * text, random CJK characters; 3 ms for English). A longer prompt is sampled: see countInputTokens.
 */
export const LOCAL_COUNT_MAX_CHARS = 8192

type Json = Record<string, unknown>

/**
 * Counts a messages-protocol body's input: `system` (string or text blocks), each message (text,
 * thinking, tool_use name and input JSON, tool_result content, images at IMAGE_TOKENS each,
 * documents by their text or DOCUMENT_TOKENS) plus MESSAGE_OVERHEAD per message, and `tools`
 * (name, description and input_schema JSON) plus TOOL_OVERHEAD per tool.
 * Bounded: text of up to `maxChars` characters in all is counted exactly; longer text is joined
 * (one newline between strings) and sampled in windows spread over it, the count scaled to its
 * length (countSampled), so at most about `maxChars` characters are tokenized however large the
 * body or however many strings it holds.
 */
export async function countInputTokens (body: Json, modelName: string, maxChars = LOCAL_COUNT_MAX_CHARS): Promise<number> {
  return countInputTokensWith(await tokenCounter(encodingFor(modelName)), body, maxChars)
}

/** countInputTokens with a given counter (no promise). */
export function countInputTokensWith (enc: TokenCounter, body: Json, maxChars = LOCAL_COUNT_MAX_CHARS): number {
  let fixed = 0
  const texts: string[] = []
  const block = (b: unknown): void => {
    if (typeof b === 'string') { texts.push(b); return }
    if (b === null || typeof b !== 'object') return
    const x = b as Json
    switch (x.type) {
      case 'text': if (typeof x.text === 'string') texts.push(x.text); break
      case 'thinking': if (typeof x.thinking === 'string') texts.push(x.thinking); break
      case 'image': fixed += IMAGE_TOKENS; break
      case 'document': {
        const src = x.source as Json | undefined
        if (src?.type === 'text' && typeof src.data === 'string') texts.push(src.data)
        else if (src?.type === 'content') content(src.content)
        else fixed += DOCUMENT_TOKENS
        break
      }
      case 'tool_use':
      case 'server_tool_use':
        if (typeof x.name === 'string') texts.push(x.name)
        texts.push(JSON.stringify(x.input ?? {}))
        break
      case 'tool_result': content(x.content); break
      default:
        // Other blocks (redacted thinking, search results...): their text fields, if any.
        if (typeof x.text === 'string') texts.push(x.text)
        if (typeof x.data === 'string' && x.type !== 'redacted_thinking') texts.push(x.data)
    }
  }
  const content = (c: unknown): void => {
    if (Array.isArray(c)) for (const b of c) block(b)
    else block(c)
  }
  content(body.system)
  const messages = Array.isArray(body.messages) ? body.messages : []
  for (const m of messages) {
    fixed += MESSAGE_OVERHEAD
    content((m as Json).content)
  }
  const tools = Array.isArray(body.tools) ? body.tools : []
  for (const t of tools) {
    const x = t as Json
    fixed += TOOL_OVERHEAD
    if (typeof x.name === 'string') texts.push(x.name)
    if (typeof x.description === 'string') texts.push(x.description)
    if (x.input_schema !== undefined) texts.push(JSON.stringify(x.input_schema))
  }
  let chars = 0
  for (const s of texts) chars += s.length
  if (chars <= maxChars) {
    let n = fixed
    for (const s of texts) if (s !== '') n += enc.count(s)
    return n
  }
  // Joined, so that many short strings cost no more than one long one.
  const all = texts.join('\n')
  return fixed + countSampled(enc, [all], all.length, maxChars)
}
