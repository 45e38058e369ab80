/** @module estimate – cheap prompt token estimates (for reservations and message_start). */

const CHARS_PER_TOKEN = 4
/** A flat per-image guess; images are billed by the upstream's real count at settle. */
const IMAGE_TOKENS = 1000

function walk (v: unknown, acc: { chars: number, images: number }, depth: number): void {
  if (depth > 12 || v === null || v === undefined) return
  if (typeof v === 'string') { acc.chars += v.length; return }
  if (Array.isArray(v)) { for (const x of v) walk(x, acc, depth + 1); return }
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>
    const type = o.type
    if (type === 'image_url' || type === 'image' || type === 'video_url' || type === 'input_audio' || type === 'document' || type === 'file') {
      acc.images++
      return
    }
    for (const k in o) if (k !== 'cache_control') walk(o[k], acc, depth + 1)
  }
}

/** Output tokens for generated characters a stream relayed before its final usage came: 4 per token, rounded up. */
export function estimateOutputTokens (chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN)
}

/** Rough input tokens of a chat or messages request: text of messages, system and tools. */
export function estimateInputTokens (body: Record<string, unknown>): number {
  const acc = { chars: 0, images: 0 }
  walk(body.messages, acc, 0)
  walk(body.system, acc, 0)
  walk(body.tools, acc, 0)
  const messages = Array.isArray(body.messages) ? body.messages.length : 0
  return Math.max(1, Math.ceil(acc.chars / CHARS_PER_TOKEN) + 3 * messages + IMAGE_TOKENS * acc.images)
}

/** The output cap of a request, clamped to the model's: what a reservation must cover. */
export function requestedOutputCap (body: Record<string, unknown>, modelMax: number): number {
  const asked = body.max_completion_tokens ?? body.max_tokens
  return typeof asked === 'number' && asked >= 0 ? Math.min(asked, modelMax) : modelMax
}
