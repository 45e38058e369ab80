/**
 * @module test/helpers/fuzz – what the fuzz tests share: reading and changing values at a path,
 * the client routes the answer fuzzers call, and the rules every answer a client gets must keep
 * (how its stream ends, its shape, its token counts).
 */
import { MAX_TOKEN_COUNT } from '../../index.ts'

export type Obj = Record<string, unknown>
export type Path = (string | number)[]

/** The value at `path` inside `v` (undefined where a step is not an object): answers are read as unknown. */
export function get (v: unknown, ...path: Array<string | number>): unknown {
  for (const k of path) v = typeof v === 'object' && v !== null ? (v as Record<string | number, unknown>)[k] : undefined
  return v
}

/** The array at `path` inside `v`, or none. */
export const list = (v: unknown, ...path: Array<string | number>): unknown[] => { const a = get(v, ...path); return Array.isArray(a) ? a : [] }

/** Every path inside a value, the root excluded. */
export function pathsOf (root: unknown): Path[] {
  const out: Path[] = []
  const stack: [unknown, Path][] = [[root, []]]
  while (stack.length) {
    const [v, p] = stack.pop()!
    if (v === null || typeof v !== 'object') continue
    for (const [k, child] of Object.entries(v)) {
      const cp = [...p, Array.isArray(v) ? Number(k) : k]
      out.push(cp)
      stack.push([child, cp])
    }
  }
  return out
}

/** setPath's value that removes the member instead. */
export const DELETE = Symbol('delete')

/** Sets (or with DELETE removes) the value at `path` inside `root`, a path pathsOf gave. */
export function setPath (root: unknown, path: Path, value: unknown): void {
  const v = get(root, ...path.slice(0, -1)) as Record<string | number, unknown>
  if (value === DELETE) delete v[path[path.length - 1]!]
  else v[path[path.length - 1]!] = value
}

/** The output cap every answer fuzzer's request sends (the billed output is held to it). */
export const MAX_TOKENS = 256

const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }

/** The client routes the answer fuzzers call, each with a request offering one tool. */
export const ROUTES = {
  chat: { path: '/v1/chat/completions', body: {
    max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'weather in a?' }],
    tools: [{ type: 'function', function: { name: 'weather', description: 'd', parameters: SCHEMA } }],
  } },
  messages: { path: '/v1/messages', body: {
    max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'weather in a?' }],
    tools: [{ name: 'weather', description: 'd', input_schema: SCHEMA }],
  } },
  responses: { path: '/v1/responses', body: {
    max_output_tokens: MAX_TOKENS, input: 'weather in a?',
    tools: [{ type: 'function', name: 'weather', description: 'd', parameters: SCHEMA, strict: false }],
  } },
} as const
export type Route = keyof typeof ROUTES

/** Whether a client stream ended as its protocol ends (true), with its error event ('error'), or neither (false). */
export function streamEnd (route: Route, text: string): boolean | 'error' {
  if (route === 'chat') {
    if (/data: \[DONE\]\s*$/.test(text)) return true
    return /data: \{"error":[^\n]*\s*$/.test(text) ? 'error' : false
  }
  if (route === 'messages') {
    if (/event: message_stop\s*\ndata: [^\n]*\s*$/.test(text)) return true
    return /event: error\s*\ndata: [^\n]*\s*$/.test(text) ? 'error' : false
  }
  if (/event: response\.(completed|incomplete)\s*\ndata: [^\n]*\s*$/.test(text)) return true
  return /event: (error|response\.failed)\s*\ndata: [^\n]*\s*$/.test(text) ? 'error' : false
}

/** Whether a 200 JSON answer has the route's shape. */
export function answerShape (route: Route, b: unknown): boolean {
  if (route === 'chat') return get(b, 'object') === 'chat.completion' && list(b, 'choices').length > 0
  if (route === 'messages') return get(b, 'type') === 'message' && Array.isArray(get(b, 'content')) && typeof get(b, 'stop_reason') === 'string'
  return get(b, 'object') === 'response' && Array.isArray(get(b, 'output')) && typeof get(b, 'status') === 'string'
}

/**
 * A count the upstream sends is at most MAX_TOKEN_COUNT: a larger one (1e308, past 2^53), like one
 * that is not a number, negative or a string, is no count (billed, it would make a cost the ledger
 * cannot hold): an input or output count of that kind makes the usage unreadable, billed the
 * estimate; a detail count of that kind reads as 0. A count the gateway shows
 * or bills adds up at most a few of them (input: uncached + cache reads + cache writes; total:
 * input + output), so none passes five.
 */
export const MAX_SHOWN = 5 * MAX_TOKEN_COUNT

/** Every token count in a client-facing `usage` object that is not a whole number from 0 to MAX_SHOWN (paths). */
export function badCounts (v: unknown, path = 'usage'): string[] {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 && v <= MAX_SHOWN ? [] : [`${path} = ${v}`]
  if (v === null || typeof v !== 'object') return []
  return Object.entries(v).flatMap(([k, c]) => badCounts(c, `${path}.${k}`))
}

/** The `usage` objects in a JSON answer or in a stream's data lines. */
export function usagesOf (v: unknown, out: unknown[] = []): unknown[] {
  if (v === null || typeof v !== 'object') return out
  for (const [k, c] of Object.entries(v)) {
    if (k === 'usage' && c !== null && typeof c === 'object') out.push(c)
    else usagesOf(c, out)
  }
  return out
}

/**
 * What is wrong with an error answer's body for a client of `route`, or undefined: messages gets
 * `{type: "error", error: {type, message}}`, chat and Responses `{error: {message, ...}}`.
 */
export function errorBodyProblem (route: Route, text: string): string | undefined {
  let e: unknown
  try { e = JSON.parse(text) } catch { return `error body is not JSON: ${text.slice(0, 120)}` }
  const messagesShape = get(e, 'type') === 'error' && typeof get(e, 'error', 'type') === 'string' && typeof get(e, 'error', 'message') === 'string'
  const openaiShape = typeof get(e, 'error', 'message') === 'string' && get(e, 'type') === undefined
  return (route === 'messages' ? messagesShape : openaiShape) ? undefined : `wrong error body for ${route}: ${text.slice(0, 200)}`
}

/**
 * What is wrong with one answer a client of `route` got (empty: nothing): a 500 (upstream garbage
 * is the upstream failing, 502; a 500 is the gateway's own), an error body not in the route's
 * shape, a 200 stream that ends neither as its protocol ends nor with its error event (nor, for a
 * `valid` answer, with the error event), a 200 body that is not JSON. `strict` (an answer the
 * gateway made, not one it relayed as the upstream wrote it): every data line JSON, the body in
 * the route's shape, and every token count the client is shown whole and bounded.
 */
export function answerProblems (route: Route, stream: boolean, status: number, text: string, valid: boolean, strict = true): string[] {
  const problems: string[] = []
  let usages: unknown[] = []
  if (status !== 200 && valid) problems.push(`status ${status} for a valid answer: ${text.slice(0, 300)}`)
  if (status >= 400) {
    if (status === 500) problems.push(`status 500: ${text.slice(0, 300)}`)
    const wrong = errorBodyProblem(route, text)
    if (wrong !== undefined) problems.push(wrong)
  } else if (status !== 200) {
    problems.push(`status ${status}: ${text.slice(0, 200)}`)
  } else if (stream) {
    const end = streamEnd(route, text)
    if (end === false) problems.push(`a 200 stream that ends neither as ${route} ends nor with its error event: ${text.slice(-300)}`)
    if (end === 'error' && valid) problems.push(`an error event for a valid answer: ${text.slice(-300)}`)
    for (const line of text.split('\n')) {
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue
      try { usages.push(...usagesOf(JSON.parse(line.slice(6)))) } catch { if (strict) problems.push(`a data line that is not JSON: ${line.slice(0, 120)}`) }
    }
  } else {
    let b: unknown
    try { b = JSON.parse(text) } catch { problems.push(`a 200 that is not JSON: ${text.slice(0, 120)}`) }
    if (b !== undefined && (strict || valid) && !answerShape(route, b)) problems.push(`a 200 not shaped as ${route}: ${text.slice(0, 200)}`)
    usages = usagesOf(b)
  }
  const bad = strict ? usages.flatMap(u => badCounts(u)) : []
  if (bad.length) problems.push(`usage the client sees: ${bad.join(', ')}`)
  return problems
}

/** The fields of a usage record recordProblems reads. */
interface RecordCounts {
  traceId: string, inputTokens: number, cachedInputTokens: number, cacheWriteTokens?: number, cacheWrite1hTokens?: number, outputTokens: number, cost: number
}

/**
 * What is wrong with the usage records of a fuzz run: a count or cost that is not a whole,
 * non-negative amount (a count past MAX_SHOWN), output past the calls' cap (billed at most what a
 * call reserved for), or a cost past all its counts at the price's highest rate.
 */
export function ledgerProblems (records: readonly RecordCounts[], price: Readonly<Record<string, number>>, cap = MAX_TOKENS): string[] {
  const out: string[] = []
  const top = Math.max(...Object.values(price))
  for (const r of records) {
    const counts: Record<string, number> = {
      inputTokens: r.inputTokens, cachedInputTokens: r.cachedInputTokens, cacheWriteTokens: r.cacheWriteTokens ?? 0, cacheWrite1hTokens: r.cacheWrite1hTokens ?? 0,
      outputTokens: r.outputTokens, cost: r.cost,
    }
    for (const [k, v] of Object.entries(counts)) {
      if (!Number.isSafeInteger(v) || v < 0 || (k !== 'cost' && v > MAX_SHOWN)) out.push(`${r.traceId}: ${k} = ${v}`)
    }
    if (r.outputTokens > cap) out.push(`${r.traceId}: outputTokens ${r.outputTokens} past the cap ${cap}`)
    const most = Math.ceil((r.inputTokens + r.outputTokens) * top)
    if (r.cost > most) out.push(`${r.traceId}: cost ${r.cost} past ${most}`)
  }
  return out
}
