/**
 * @module tokens/reservation – the input tokens a balance reservation covers: the larger of the
 * byte rule (estimate.ts `reservedInputTokens`: every byte of the body at 4 per token, which no
 * shaping of the request can bring down) and the prompt's text counted with the model's
 * tokenizer, which is the higher one for text that tokenizes at fewer than 4 bytes per token
 * (CJK scripts, code, numbers, random strings). Counting is bounded: about `maxChars`
 * characters are tokenized per call; a longer prompt is sampled (see tokenizer.ts countSampled).
 * reservationBoundTokens needs no tokenizer: the plugins reserve it first, and this count only
 * when the bound is refused.
 */
import { IMAGE_TOKENS, reservedInputTokens } from './estimate.ts'
import { boundPartsOf } from './walk.ts'
import { MESSAGE_OVERHEAD, TOOL_OVERHEAD } from './local-count.ts'
import { rawBytesOf } from './raw-bytes.ts'
import { countSampled, reservationEncodingFor, tokenCounter, tokenCounterNow, type TokenCounter } from './tokenizer.ts'

/** The text of a request: every string an upstream reads as text, in body order. */
interface Texts { strings: string[], chars: number, images: number, messages: number, tools: number }

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null

/**
 * Every string value of the body except inline media payloads (data: URIs, base64 sources,
 * `file_data`, audio data), which upstreams bill per image or page, not as text, and which the
 * byte rule already covers. Keys and `cache_control` markers are not text. Iterative: any depth.
 */
function collect (body: Record<string, unknown>): Texts {
  const acc: Texts = { strings: [], chars: 0, images: 0, messages: 0, tools: 0 }
  const list = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : undefined
  acc.messages = list?.length ?? 1
  acc.tools = Array.isArray(body.tools) ? body.tools.length : 0
  const stack: unknown[] = [body]
  const strings: string[] = []
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v === 'string') {
      if (!v.startsWith('data:')) { strings.push(v); acc.chars += v.length }
      continue
    }
    if (!isObject(v)) continue
    if (Array.isArray(v)) { for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]); continue }
    const t = v.type
    if (t === 'image_url' || t === 'image' || t === 'input_image') acc.images++
    const inline = t === 'base64' || 'format' in v
    const keys = Object.keys(v)
    for (let i = keys.length - 1; i >= 0; i--) {
      const k = keys[i]
      if (k === 'cache_control' || k === 'file_data' || (k === 'data' && inline)) continue
      stack.push(v[k])
    }
  }
  acc.strings = strings
  return acc
}

/** Strings up to this many UTF-16 units are bounded at 3 bytes each; longer ones are measured. */
const MEASURED_STRING = 64

/**
 * An upper bound of the prompt's tokens with no tokenizer: the UTF-8 bytes of every string
 * collect() would count (no tokenizer's token is shorter than one byte, so a text has at most as
 * many tokens as bytes), plus the same IMAGE_TOKENS, MESSAGE_OVERHEAD and TOOL_OVERHEAD. Never below
 * countWith() of any counter over the same body, sampled or not. For a body parsed from the
 * client's text (rawBytesOf), the strings' bytes together are at most the text's size, less the
 * strings collect() leaves out, each at least one byte per UTF-16 unit in the text: no string is
 * measured, and the parts left out come from the walk the estimate and the byte rule already made
 * (boundPartsOf). Otherwise, in a walk of its own, a long string's bytes are counted natively
 * (Buffer.byteLength), a short one taken at 3 bytes per UTF-16 unit (the most any unit takes in UTF-8).
 */
function textBytesBound (body: Record<string, unknown>): number {
  const list = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : undefined
  let n = MESSAGE_OVERHEAD * (list?.length ?? 1) + TOOL_OVERHEAD * (Array.isArray(body.tools) ? body.tools.length : 0)
  const raw = rawBytesOf(body)
  if (raw !== undefined) {
    const parts = boundPartsOf(body)
    return n + raw - parts.leftOut + IMAGE_TOKENS * parts.images
  }
  const stack: unknown[] = [body]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v === 'string') {
      if (v.length <= MEASURED_STRING) n += 3 * v.length
      else if (!v.startsWith('data:')) n += Buffer.byteLength(v, 'utf8')
      continue
    }
    if (!isObject(v)) continue
    if (Array.isArray(v)) { for (let i = 0; i < v.length; i++) stack.push(v[i]); continue }
    const t = v.type
    if (t === 'image_url' || t === 'image' || t === 'input_image') n += IMAGE_TOKENS
    const inline = t === 'base64' || 'format' in v
    for (const k in v) {
      if (k === 'cache_control' || k === 'file_data' || (k === 'data' && inline)) continue
      stack.push(v[k])
    }
  }
  return n
}

/**
 * The input tokens a reservation covers without a tokenizer: the larger of the byte rule
 * (reservedInputTokens) and textBytesBound, capped by the model's context length. An upper bound
 * of the prompt as any byte-level tokenizer counts it, so the work per call is a walk of the
 * parsed body, not a tokenization. Higher than reservationInputTokens (about four times on
 * English text): a plugin reserves this first and counts with the tokenizer only when this much
 * is refused (a tight balance or quota), where the tokenizer's count may still fit.
 */
export function reservationBoundTokens (body: Record<string, unknown>, bodyBytes: number, contextLength: number): number {
  // Once per call: the balance and quota plugins both hold it for the same body.
  const known = bounded.get(body)
  if (known !== undefined && known.bodyBytes === bodyBytes && known.contextLength === contextLength) return known.tokens
  const floor = reservedInputTokens(body, bodyBytes, contextLength)
  const cap = contextLength > 0 ? contextLength : Number.POSITIVE_INFINITY
  const tokens = floor >= cap ? floor : Math.min(cap, Math.max(floor, textBytesBound(body)))
  bounded.set(body, { bodyBytes, contextLength, tokens })
  return tokens
}
const bounded = new WeakMap<object, { bodyBytes: number, contextLength: number, tokens: number }>()

/** The prompt's count with `counter`: the text of every string plus images, messages and tools. */
function countWith (counter: TokenCounter, body: Record<string, unknown>, maxChars: number): number {
  const texts = collect(body)
  return countSampled(counter, texts.strings, texts.chars, maxChars) + IMAGE_TOKENS * texts.images + MESSAGE_OVERHEAD * texts.messages + TOOL_OVERHEAD * texts.tools
}

/**
 * The prompt as the model's tokenizer counts it (reservationEncodingFor `modelName`): the text of every
 * string in the body, plus IMAGE_TOKENS per image, MESSAGE_OVERHEAD per message and
 * TOOL_OVERHEAD per tool. A prompt of more than `maxChars` characters is sampled.
 */
export async function countedInputTokens (body: Record<string, unknown>, modelName: string, maxChars: number): Promise<number> {
  return countWith(await tokenCounter(reservationEncodingFor(modelName)), body, maxChars)
}

/**
 * The input tokens to reserve for a call: the larger of the byte rule and the tokenizer's count
 * (see the module doc), capped by the model's context length. `maxChars` 0: the byte rule alone.
 */
export async function reservationInputTokens (body: Record<string, unknown>, bodyBytes: number, contextLength: number, modelName: string, maxChars: number): Promise<number> {
  const known = remembered(body, bodyBytes, contextLength, modelName, maxChars)
  if (known !== undefined) return known
  const floor = reservedInputTokens(body, bodyBytes, contextLength)
  const cap = contextLength > 0 ? contextLength : Number.POSITIVE_INFINITY
  if (maxChars <= 0 || floor >= cap) return remember(body, bodyBytes, contextLength, modelName, maxChars, floor)
  return remember(body, bodyBytes, contextLength, modelName, maxChars, Math.min(cap, Math.max(floor, await countedInputTokens(body, modelName, maxChars))))
}

/**
 * reservationInputTokens without a promise, for an admit that runs synchronously: undefined while
 * the model's tokenizer is still loading (the caller then awaits reservationInputTokens).
 */
export function reservationInputTokensNow (body: Record<string, unknown>, bodyBytes: number, contextLength: number, modelName: string, maxChars: number): number | undefined {
  const known = remembered(body, bodyBytes, contextLength, modelName, maxChars)
  if (known !== undefined) return known
  const floor = reservedInputTokens(body, bodyBytes, contextLength)
  const cap = contextLength > 0 ? contextLength : Number.POSITIVE_INFINITY
  if (maxChars <= 0 || floor >= cap) return remember(body, bodyBytes, contextLength, modelName, maxChars, floor)
  const counter = tokenCounterNow(reservationEncodingFor(modelName))
  return counter === undefined ? undefined : remember(body, bodyBytes, contextLength, modelName, maxChars, Math.min(cap, Math.max(floor, countWith(counter, body, maxChars))))
}

/** One count per call: the balance and quota plugins both reserve for the same body. */
interface Counted { bodyBytes: number, contextLength: number, modelName: string, maxChars: number, tokens: number }
const counted = new WeakMap<object, Counted>()

function remembered (body: object, bodyBytes: number, contextLength: number, modelName: string, maxChars: number): number | undefined {
  const c = counted.get(body)
  return c !== undefined && c.bodyBytes === bodyBytes && c.contextLength === contextLength && c.modelName === modelName && c.maxChars === maxChars ? c.tokens : undefined
}

function remember (body: object, bodyBytes: number, contextLength: number, modelName: string, maxChars: number, tokens: number): number {
  counted.set(body, { bodyBytes, contextLength, modelName, maxChars, tokens })
  return tokens
}
