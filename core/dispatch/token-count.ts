/**
 * @module token-count – local input-token counts for `POST /v1/messages/count_tokens` when no
 * messages-protocol upstream can count them: real OpenAI tokenizers (js-tiktoken), documented
 * approximations for everything else.
 */
import { Tiktoken } from 'js-tiktoken/lite'

/** Tokens one image costs, whatever its size (Anthropic's cost of a ~1.15 megapixel image). */
export const IMAGE_TOKENS = 1600
/** Tokens a document block with binary content (PDF) costs: no page count is known here. */
export const DOCUMENT_TOKENS = 1600
/** Framing per message (role and separators), as OpenAI counts chat messages. */
export const MESSAGE_OVERHEAD = 3
/** Framing per tool definition. */
export const TOOL_OVERHEAD = 8

export type EncodingName = 'o200k_base' | 'cl100k_base'

/**
 * Which tokenizer a model name counts with: o200k_base for the OpenAI gpt-4o / gpt-4.1 / gpt-4.5 /
 * gpt-5 / o-series families, cl100k_base for older OpenAI models (gpt-4, gpt-3.5, text-embedding),
 * and o200k_base as the approximation for every other vendor (their tokenizers are not public).
 * A vendor prefix (`openai/gpt-4o`) is ignored.
 */
export function encodingFor (modelName: string): EncodingName {
  const name = modelName.slice(modelName.lastIndexOf('/') + 1).toLowerCase()
  if (/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-4o|o\d)/.test(name)) return 'o200k_base'
  if (/^(gpt-4|gpt-3\.5|gpt-35|text-embedding)/.test(name)) return 'cl100k_base'
  return 'o200k_base'
}

const encoders = new Map<EncodingName, Tiktoken>()

/** The rank tables are large: each is loaded on first use only. */
async function encoder (name: EncodingName): Promise<Tiktoken> {
  let enc = encoders.get(name)
  if (!enc) {
    const ranks = name === 'o200k_base'
      ? (await import('js-tiktoken/ranks/o200k_base')).default
      : (await import('js-tiktoken/ranks/cl100k_base')).default
    enc = new Tiktoken(ranks)
    encoders.set(name, enc)
  }
  return enc
}

type Json = Record<string, unknown>

/**
 * Counts a messages-protocol body's input: `system` (string or text blocks), each message (text,
 * thinking, tool_use name and input JSON, tool_result content, images at IMAGE_TOKENS each,
 * documents by their text or DOCUMENT_TOKENS) plus MESSAGE_OVERHEAD per message, and `tools`
 * (name, description and input_schema JSON) plus TOOL_OVERHEAD per tool.
 */
export async function countInputTokens (body: Json, modelName: string): Promise<number> {
  const enc = await encoder(encodingFor(modelName))
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
  let n = fixed
  for (const s of texts) if (s !== '') n += enc.encode(s).length
  return n
}
