/** @module providers/echo/answer – the deterministic answer: what to say, why it stops, token counts. */
import type { EchoPrompt } from './prompt.ts'

export interface EchoAnswer {
  /** The reply as word pieces (each piece is one output token and one stream delta). */
  pieces: string[]
  toolCall?: { id: string, name: string, arguments: string }
  stop: 'stop' | 'length' | 'tool'
  inputTokens: number
  cachedTokens: number
  outputTokens: number
}

/** Estimated tokens of the prompt: ~4 characters a token plus a few per message, at least 1. */
function promptTokens (p: EchoPrompt): number {
  return Math.max(1, Math.ceil(p.promptChars / 4) + 3 * p.messageCount + 85 * p.images)
}

/**
 * Echoes the last user text. With tools offered (and tool_choice not "none"), a user text that
 * starts with "/tool" makes the model call the first (or the named) tool with {"text": rest}.
 */
export function answer (p: EchoPrompt, idSeed: string): EchoAnswer {
  const inputTokens = promptTokens(p)
  // A deterministic cache hit: a quarter of the prompt, as if the prefix had been seen before.
  const cachedTokens = Math.floor(inputTokens / 4)
  const wantsTool = p.tools.length > 0 && p.toolChoice !== 'none' && p.toolResult === undefined &&
    (p.lastText.trimStart().startsWith('/tool') || p.toolChoice === 'required' || p.toolChoice === 'any' || p.toolChoice?.startsWith('name:'))
  if (wantsTool) {
    const named = p.toolChoice?.startsWith('name:') ? p.toolChoice.slice(5) : undefined
    const name = named ?? p.tools[0].name
    const rest = p.lastText.trimStart().replace(/^\/tool\s*/, '')
    const args = JSON.stringify({ text: rest })
    return { pieces: [], toolCall: { id: `call_echo_${idSeed}`, name, arguments: args }, stop: 'tool', inputTokens, cachedTokens, outputTokens: Math.max(1, Math.ceil(args.length / 4)) }
  }
  const base = p.toolResult !== undefined ? `Echo: tool said ${p.toolResult}` : `Echo: ${p.lastText || '(no text)'}`
  const text = p.images > 0 ? `${base} [${p.images} image${p.images > 1 ? 's' : ''}]` : base
  const words = text.split(/(?<= )/)
  let stop: EchoAnswer['stop'] = 'stop'
  let pieces = words
  if (p.maxTokens !== undefined && words.length > p.maxTokens) {
    pieces = words.slice(0, Math.max(p.maxTokens, 0))
    stop = 'length'
  }
  return { pieces, stop, inputTokens, cachedTokens, outputTokens: Math.max(1, pieces.length) }
}
