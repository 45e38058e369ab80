/** @module sse – a tolerant server-sent-events reader and the two framings the protocols use. */
import { StringDecoder } from 'node:string_decoder'
import type { SseEvent } from './provider.ts'

/**
 * Incremental SSE parser (the WHATWG rules the official SDKs follow): `\n`, `\r\n` and `\r` line
 * ends; `:` comment lines ignored; `data:` with or without one space; several `data:` lines joined
 * with `\n`; `id:`/`retry:` ignored. Each event keeps its exact bytes (`raw`) so a same-protocol
 * stream can be forwarded without re-serialization.
 */
export class SseParser {
  readonly #dec = new StringDecoder('utf8')
  #buf = ''
  /** Where the next unread line starts in #buf. */
  #pos = 0
  #event: string | undefined
  #data: string[] = []

  /** Feeds one chunk; returns the events it completed. */
  push (chunk: Buffer | string): SseEvent[] {
    this.#buf += typeof chunk === 'string' ? chunk : this.#dec.write(chunk)
    return this.#drain(false)
  }

  /** End of input: an event not followed by a blank line still counts (as the SDKs do). */
  end (): SseEvent[] {
    this.#buf += this.#dec.end()
    const out = this.#drain(true)
    if (this.#pos < this.#buf.length) {
      this.#line(this.#buf.slice(this.#pos))
      this.#pos = this.#buf.length
    }
    if (this.#data.length > 0) out.push(this.#emit(this.#buf))
    this.#buf = ''
    this.#pos = 0
    return out
  }

  #drain (final: boolean): SseEvent[] {
    const out: SseEvent[] = []
    const buf = this.#buf
    let start = this.#pos
    let evStart = 0
    for (;;) {
      const nl = buf.indexOf('\n', start)
      const cr = buf.indexOf('\r', start)
      let end: number
      if (cr === -1 || (nl !== -1 && nl < cr)) end = nl
      else end = cr
      if (end === -1) break
      let next = end + 1
      if (buf.charCodeAt(end) === 13) {
        if (end + 1 >= buf.length && !final) break // a lone \r at the end: wait for a possible \n
        if (buf.charCodeAt(end + 1) === 10) next = end + 2
      }
      const line = buf.slice(start, end)
      start = next
      if (line.length === 0) {
        if (this.#data.length > 0) out.push(this.#emit(buf.slice(evStart, next)))
        else { this.#event = undefined }
        evStart = next
        continue
      }
      this.#line(line)
    }
    // Keep only the unfinished event's text.
    this.#buf = buf.slice(evStart)
    this.#pos = start - evStart
    return out
  }

  #line (line: string): void {
    if (line.charCodeAt(0) === 58) return // ':' comment
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.charCodeAt(0) === 32) value = value.slice(1)
    if (field === 'data') this.#data.push(value)
    else if (field === 'event') this.#event = value
  }

  #emit (raw: string): SseEvent {
    const ev: SseEvent = { data: this.#data.length === 1 ? this.#data[0] : this.#data.join('\n'), raw }
    if (this.#event !== undefined) ev.event = this.#event
    this.#event = undefined
    this.#data = []
    return ev
  }
}

/** `data: <json>\n\n` – the chat-completions framing. */
export function sseData (obj: unknown): string {
  return `data: ${JSON.stringify(obj)}\n\n`
}

/** `event: <name>\ndata: <json>\n\n` – the messages framing (the `event:` line is mandatory). */
export function sseEvent (name: string, obj: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(obj)}\n\n`
}

export const SSE_DONE = 'data: [DONE]\n\n'
