/**
 * @module responses-output – how many characters of output a Responses stream has carried so far,
 * for the estimate a stream without usage is billed (an upstream that cut it, a deadline).
 *
 * A piece of output (one content part's text, one call's arguments, one summary part) may come as
 * deltas, whole in the event that adds it (`response.output_item.added`,
 * `response.content_part.added`: some upstreams send the text there and no delta), or whole in its
 * `.done` events, which repeat what the deltas carried. Each piece counts once: the larger of its
 * deltas' sum and the longest whole text seen for it.
 */
import type { ResponsesEventWire } from './wire-responses.ts'
import { isIndex } from './common.ts'

type Piece = { deltas: number, whole: number }

const len = (v: unknown): number => typeof v === 'string' ? v.length : 0
const at = (v: unknown, k: string): unknown => typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[k] : undefined

/** The text a content part carries: output text, a refusal, reasoning text. */
const partText = (part: unknown): number => len(at(part, 'text')) + len(at(part, 'refusal'))

/** Characters of output in one Responses stream, each piece counted once (see the module). */
export class ResponsesOutputCount {
  /** Pieces by kind and indices: `c` content part, `f` call arguments or input, `s` summary part. */
  readonly #pieces = new Map<string, Piece>()
  #chars = 0

  get chars (): number { return this.#chars }

  #piece (key: string): Piece {
    let p = this.#pieces.get(key)
    if (p === undefined) this.#pieces.set(key, p = { deltas: 0, whole: 0 })
    return p
  }

  #delta (key: string, n: number): void {
    if (n === 0) return
    const p = this.#piece(key)
    const before = Math.max(p.deltas, p.whole)
    p.deltas += n
    this.#chars += Math.max(p.deltas, p.whole) - before
  }

  #whole (key: string, n: number): void {
    if (n === 0) return
    const p = this.#piece(key)
    const before = Math.max(p.deltas, p.whole)
    if (n > p.whole) p.whole = n
    this.#chars += Math.max(p.deltas, p.whole) - before
  }

  /** An output item, as added or done: its content parts, its summary parts, its call's arguments or input. */
  #item (o: number, item: unknown): void {
    const content = at(item, 'content')
    if (Array.isArray(content)) for (let i = 0; i < content.length; i++) this.#whole(`c${o}:${i}`, partText(content[i]))
    const summary = at(item, 'summary')
    if (Array.isArray(summary)) for (let i = 0; i < summary.length; i++) this.#whole(`s${o}:${i}`, len(at(summary[i], 'text')))
    this.#whole(`f${o}`, len(at(item, 'arguments')) + len(at(item, 'input')))
  }

  /** Counts one event of the stream (named `name`, its data `d`). */
  push (name: unknown, d: ResponsesEventWire | null): void {
    if (d === null || typeof d !== 'object') return
    const o = d.output_index
    if (!isIndex(o)) return
    const e = d as Record<string, unknown>
    const ci = isIndex(e.content_index) ? e.content_index : 0
    const si = isIndex(d.summary_index) ? d.summary_index : 0
    switch (name) {
      case 'response.output_text.delta': case 'response.refusal.delta': case 'response.reasoning_text.delta':
        return this.#delta(`c${o}:${ci}`, len(d.delta))
      case 'response.function_call_arguments.delta': case 'response.custom_tool_call_input.delta':
        return this.#delta(`f${o}`, len(d.delta))
      case 'response.reasoning_summary_text.delta':
        return this.#delta(`s${o}:${si}`, len(d.delta))
      case 'response.output_text.done': case 'response.reasoning_text.done':
        return this.#whole(`c${o}:${ci}`, len(e.text))
      case 'response.refusal.done':
        return this.#whole(`c${o}:${ci}`, len(e.refusal))
      case 'response.function_call_arguments.done':
        return this.#whole(`f${o}`, len(e.arguments))
      case 'response.custom_tool_call_input.done':
        return this.#whole(`f${o}`, len(e.input))
      case 'response.reasoning_summary_text.done':
        return this.#whole(`s${o}:${si}`, len(e.text))
      case 'response.content_part.added': case 'response.content_part.done':
        return this.#whole(`c${o}:${ci}`, partText(e.part))
      case 'response.reasoning_summary_part.added': case 'response.reasoning_summary_part.done':
        return this.#whole(`s${o}:${si}`, len(at(e.part, 'text')))
      case 'response.output_item.added': case 'response.output_item.done':
        return this.#item(o, d.item)
    }
  }
}
