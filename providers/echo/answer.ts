/** @module providers/echo/answer – the deterministic answer: what to say, why it stops, token counts. */
import type { EchoPrompt } from './prompt.ts'
import { argumentsFor } from './arguments.ts'

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

/** "/tool" standing as a word anywhere in a line: what follows it on that line is the call's text. */
const TRIGGER = /(?:^|\s)\/tool(?:[ \t]+([^\n]*))?(?=\s|$)/g

/**
 * The text after the last "/tool" of the last user turn, or undefined when it has none. Clients
 * prepend context to the user's words (system reminders, environment blocks, AGENTS.md), so the
 * trigger counts wherever it stands, and the last one (the user's own words come last) wins.
 */
export function toolTrigger (parts: readonly string[]): string | undefined {
  let found: string | undefined
  for (const part of parts) {
    for (const m of part.matchAll(TRIGGER)) found = (m[1] ?? '').trim()
  }
  return found
}

/**
 * Echoes the last user text. With tools offered (and tool_choice not "none"), a "/tool" in the
 * last user text makes the model call a tool: the one named by the word after "/tool" if it names
 * one ("/tool Bash ls"), else the one tool_choice names, else the first; its arguments follow the
 * tool's JSON Schema, their strings carrying the rest of the line.
 */
export function answer (p: EchoPrompt, idSeed: string): EchoAnswer {
  const inputTokens = promptTokens(p)
  // A deterministic cache hit: a quarter of the prompt, as if the prefix had been seen before.
  const cachedTokens = Math.floor(inputTokens / 4)
  const trigger = p.toolResult === undefined ? toolTrigger(p.lastParts) : undefined
  const forced = p.toolChoice === 'required' || p.toolChoice === 'any' || p.toolChoice?.startsWith('name:') === true
  const wantsTool = p.tools.length > 0 && p.toolChoice !== 'none' && p.toolResult === undefined && (trigger !== undefined || forced)
  if (wantsTool) {
    let rest = trigger ?? p.lastText.trim()
    const named = p.toolChoice?.startsWith('name:') ? p.toolChoice.slice(5) : undefined
    const first = /^(\S+)\s*/.exec(rest)
    let tool = named !== undefined ? p.tools.find(t => t.name === named) : undefined
    const byWord = first !== null ? p.tools.find(t => t.name === first[1]) : undefined
    if (first !== null && byWord !== undefined && (named === undefined || byWord.name === named)) {
      tool = byWord
      rest = rest.slice(first[0].length)
    }
    tool ??= named !== undefined ? { name: named, schema: undefined } : p.tools[0]
    const args = JSON.stringify(argumentsFor(tool.schema, rest))
    return { pieces: [], toolCall: { id: `call_echo_${idSeed}`, name: tool.name, arguments: args }, stop: 'tool', inputTokens, cachedTokens, outputTokens: Math.max(1, Math.ceil(args.length / 4)) }
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
