/** @module sse – a tolerant server-sent-events reader and the two framings the protocols use. */
import { StringDecoder } from 'node:string_decoder'
import type { SseEvent } from './provider.ts'

/** Raised when one upstream event (its lines together) passes the parser's size cap. */
export class SseEventTooLarge extends Error {
  constructor (readonly limitBytes: number) {
    super(`an upstream stream event passed ${limitBytes} bytes`)
    this.name = 'SseEventTooLarge'
  }
}

/** UTF-8 takes at most 3 bytes per UTF-16 code unit: below this many code units a text is surely under a byte cap. */
const MAX_BYTES_PER_CODE_UNIT = 3

/**
 * Incremental SSE parser (the WHATWG rules the official SDKs follow): `\n`, `\r\n` and `\r` line
 * ends; `:` comment lines ignored; `data:` with or without one space; several `data:` lines joined
 * with `\n`; `id:`/`retry:` ignored. Each event keeps its exact bytes (`raw`) so a same-protocol
 * stream can be forwarded without re-serialization.
 *
 * Linear in its input: each chunk is searched once, from where the last line ended; what an
 * unfinished line or event already holds is kept in pieces and joined once, when it completes.
 * An event larger than `maxEventBytes` (one endless line, or many lines with no blank line)
 * throws SseEventTooLarge instead of growing without bound.
 */
export class SseParser {
  readonly #dec = new StringDecoder('utf8')
  readonly #max: number
  /** Text of the unfinished line from earlier chunks (no terminator). */
  #linePrev: string[] = []
  /** Exact text of the unfinished event from earlier chunks. */
  #rawPrev: string[] = []
  /** Bytes of the unfinished event from earlier chunks. */
  #pending = 0
  /** The last chunk ended with `\r`: its line is held until the next chunk says whether `\n` follows. */
  #cr = false
  #event: string | undefined
  #data: string[] = []

  constructor (opts: { maxEventBytes?: number } = {}) {
    this.#max = opts.maxEventBytes ?? Infinity
  }

  /** Feeds one chunk; returns the events it completed. Throws SseEventTooLarge past the cap. */
  push (chunk: Buffer | string): SseEvent[] {
    const out: SseEvent[] = []
    if (typeof chunk === 'string') this.#scan(chunk, Buffer.byteLength(chunk), out)
    else this.#scan(this.#dec.write(chunk), chunk.length, out)
    return out
  }

  /** End of input: an event not followed by a blank line still counts (as the SDKs do). */
  end (): SseEvent[] {
    const out: SseEvent[] = []
    const rest = this.#dec.end()
    if (rest !== '') this.#scan(rest, Buffer.byteLength(rest), out)
    if (this.#cr) {
      this.#cr = false
      const line = this.#takeLine('')
      if (line === '') this.#blank(this.#rawPrev.join(''), out)
      else this.#field(line)
    } else if (this.#linePrev.length > 0) {
      this.#field(this.#takeLine(''))
    }
    if (this.#data.length > 0) out.push(this.#emit(this.#rawPrev.join('')))
    this.#rawPrev = []
    this.#pending = 0
    this.#event = undefined
    return out
  }

  #scan (s: string, bytes: number, out: SseEvent[]): void {
    if (s === '') { this.#pending += bytes; return }
    let pos = 0
    /** Where the unfinished event's text starts in `s`. */
    let seg = 0
    let boundary = false
    if (this.#cr) {
      this.#cr = false
      if (s.charCodeAt(0) === 10) pos = 1
      const line = this.#takeLine('')
      if (line === '') { this.#endEvent(s, seg, pos, out); seg = pos; boundary = true } else this.#field(line)
    }
    // Next known \n and \r at or after `pos` (-1: none left in `s`): each is searched for once.
    let nl = -2
    let cr = -2
    for (;;) {
      if (nl !== -1 && nl < pos) nl = s.indexOf('\n', pos)
      if (cr !== -1 && cr < pos) cr = s.indexOf('\r', pos)
      const end = cr === -1 ? nl : nl === -1 ? cr : Math.min(nl, cr)
      if (end === -1) break
      let next = end + 1
      if (end === cr) {
        if (next === s.length) {
          this.#linePrev.push(s.slice(pos, end))
          this.#cr = true
          pos = s.length
          break
        }
        if (s.charCodeAt(next) === 10) next++
      }
      const line = this.#takeLine(s.slice(pos, end))
      pos = next
      if (line === '') { this.#endEvent(s, seg, next, out); seg = next; boundary = true } else this.#field(line)
    }
    if (pos < s.length) this.#linePrev.push(s.slice(pos))
    if (seg < s.length) {
      const tail = s.slice(seg)
      this.#rawPrev.push(tail)
      this.#pending = boundary ? Buffer.byteLength(tail) : this.#pending + bytes
    } else {
      this.#pending = 0
    }
    if (this.#pending > this.#max) throw new SseEventTooLarge(this.#max)
  }

  /** A blank line at s[..next): the event whose text began at s[seg] (plus earlier pieces) ends. */
  #endEvent (s: string, seg: number, next: number, out: SseEvent[]): void {
    const part = s.slice(seg, next)
    if (this.#pending + MAX_BYTES_PER_CODE_UNIT * part.length > this.#max && this.#pending + Buffer.byteLength(part) > this.#max) {
      throw new SseEventTooLarge(this.#max)
    }
    const raw = this.#rawPrev.length > 0 ? this.#rawPrev.join('') + part : part
    this.#rawPrev = []
    this.#pending = 0
    this.#blank(raw, out)
  }

  #blank (raw: string, out: SseEvent[]): void {
    if (this.#data.length > 0) out.push(this.#emit(raw))
    else this.#event = undefined
  }

  #takeLine (last: string): string {
    if (this.#linePrev.length === 0) return last
    this.#linePrev.push(last)
    const line = this.#linePrev.join('')
    this.#linePrev = []
    return line
  }

  #field (line: string): void {
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
