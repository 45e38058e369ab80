/**
 * @module types/carried-thinking – thinking blocks whose signature the gateway wrote to carry
 * another vendor's reasoning through a messages client, and the rule that keeps them from a Claude
 * upstream. The carriers: `gw-reasoning:` + base64(JSON `{encrypted_content, summary}`) holds a
 * Responses upstream's reasoning item; `gw-gemini:` + base64(JSON `{ s, call? }`) holds a Gemini
 * thought signature (`s`) and the tool_use id of the function call it came on (`call`). A colon is
 * no base64 character, so no upstream's own signature starts with either prefix.
 */

export const REASONING_PREFIX = 'gw-reasoning:'
export const GEMINI_SIGNATURE_PREFIX = 'gw-gemini:'

/** A signature the gateway wrote to carry another vendor's reasoning (a Responses item, a Gemini signature): never a messages upstream's own. */
export function carriedSignature (signature: string): boolean {
  return signature.startsWith(REASONING_PREFIX) || signature.startsWith(GEMINI_SIGNATURE_PREFIX)
}

type Turn = { role?: unknown, content?: unknown }
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const isCarried = (b: unknown): boolean => isObject(b) && b.type === 'thinking' && typeof b.signature === 'string' && carriedSignature(b.signature)
const startsWithThinking = (content: unknown[]): boolean => isObject(content[0]) && (content[0].type === 'thinking' || content[0].type === 'redacted_thinking')
const hasToolUse = (content: unknown[]): boolean => content.some(b => isObject(b) && b.type === 'tool_use')

/**
 * A messages body as a Claude upstream (Anthropic's API, Bedrock, Claude on Vertex) takes it back.
 * Claude refuses a thinking block whose signature it did not issue, so blocks carrying another
 * vendor's reasoning (a conversation that moved from a Gemini or OpenAI model to a Claude one) are
 * dropped; a turn left empty goes, and the turns on either side join. With thinking on, Claude also
 * refuses a tool loop whose last assistant turn does not start with its thinking: when that turn
 * lost its leading block here, thinking is switched off for the call (the earlier reasoning was
 * another model's and cannot be given back). The same object when there is nothing to drop.
 */
export function withoutCarriedThinking<T extends Readonly<Record<string, unknown>>> (body: T): T {
  const messages = body.messages
  if (!Array.isArray(messages)) return body
  const carriedIn = (m: unknown): boolean => isObject(m) && m.role === 'assistant' && Array.isArray(m.content) && (m.content as unknown[]).some(isCarried)
  if (!messages.some(carriedIn)) return body
  let lastAssistant = -1
  messages.forEach((m, i) => { if (isObject(m) && m.role === 'assistant') lastAssistant = i })
  let loopLostThinking = false
  const out: Turn[] = []
  messages.forEach((m: unknown, i) => {
    let turn = m as Turn
    if (carriedIn(m)) {
      const before = turn.content as unknown[]
      const content = before.filter(b => !isCarried(b))
      if (i === lastAssistant && startsWithThinking(before) && !startsWithThinking(content) && hasToolUse(content)) loopLostThinking = true
      if (content.length === 0) return
      turn = { ...turn, content }
    }
    const prev = out[out.length - 1]
    if (prev !== undefined && prev.role === turn.role && Array.isArray(prev.content) && Array.isArray(turn.content)) {
      out[out.length - 1] = { ...prev, content: [...prev.content, ...turn.content] }
    } else {
      out.push(turn)
    }
  })
  const result: Record<string, unknown> = { ...body, messages: out }
  const thinking = body.thinking
  if (loopLostThinking && isObject(thinking) && thinking.type !== 'disabled') delete result.thinking
  return result as T
}
