/** @module sse – a tolerant server-sent-events reader and the two framings the protocols use. */
import { StringDecoder } from 'node:string_decoder'
import type { SseEvent } from './provider.ts'

/** Raised when one upstream event (its lines together) passes the parser's size cap. */
export class SseEventTooLarge extends Error {
  readonly limitBytes: number
  constructor (limitBytes: number) {
    super(`an upstream stream event passed ${limitBytes} bytes`)
    this.limitBytes = limitBytes
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
  /** The event's data: its first `data:` line, then the others (an array only for several lines). */
  #data: string | undefined = undefined
  #dataMore: string[] | undefined = undefined
  /** No partial line, event or character is held from earlier chunks. */
  #clean = true
  /** Bytes of emitted events' raw text in the chunk being scanned. */
  #rawChars = 0
  /**
   * true when the last chunk pushed was exactly a run of whole events: it started and ended on
   * event boundaries with nothing held, and every character of it is in some event's `raw`, so
   * the events' raw texts joined are that chunk (a relay may forward its bytes as they came).
   */
  whole = false

  constructor (opts: { maxEventBytes?: number } = {}) {
    this.#max = opts.maxEventBytes ?? Infinity
  }

  /** Feeds one chunk; returns the events it completed. Throws SseEventTooLarge past the cap. */
  push (chunk: Buffer | string): SseEvent[] {
    const out: SseEvent[] = []
    const wasClean = this.#clean
    this.#rawChars = 0
    let s: string
    let lastLf: boolean
    if (typeof chunk === 'string') {
      s = chunk
      this.#scan(s, Buffer.byteLength(s), out)
      lastLf = s.charCodeAt(s.length - 1) === 10
    } else {
      s = this.#dec.write(chunk)
      this.#scan(s, chunk.length, out)
      // A chunk whose last byte is a line feed leaves no partial character in the decoder.
      lastLf = chunk.length > 0 && chunk[chunk.length - 1] === 10
    }
    this.#clean = lastLf && !this.#cr && this.#linePrev.length === 0 && this.#rawPrev.length === 0
    this.whole = wasClean && this.#clean && this.#rawChars === s.length && s.length > 0
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
    if (this.#data !== undefined) out.push(this.#emit(this.#rawPrev.join('')))
    this.#rawPrev = []
    this.#pending = 0
    this.#event = undefined
    this.#clean = true
    this.whole = false
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
    if (this.#rawPrev.length > 0) this.#rawPrev = []
    this.#pending = 0
    if (this.#data !== undefined) this.#rawChars += part.length
    this.#blank(raw, out)
  }

  #blank (raw: string, out: SseEvent[]): void {
    if (this.#data !== undefined) out.push(this.#emit(raw))
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
    // The field name is compared in place (no slice); the value is one slice, its one leading space skipped.
    const name = colon === -1 ? line.length : colon
    const from = colon === -1 ? line.length : line.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1
    if (name === 4 && line.startsWith('data')) {
      const value = line.slice(from)
      if (this.#data === undefined) this.#data = value
      else (this.#dataMore ??= []).push(value)
    } else if (name === 5 && line.startsWith('event')) this.#event = line.slice(from)
  }

  #emit (raw: string): SseEvent {
    const more = this.#dataMore
    const ev: SseEvent = { data: more === undefined ? this.#data! : `${this.#data}\n${more.join('\n')}`, raw }
    if (this.#event !== undefined) ev.event = this.#event
    this.#event = undefined
    this.#data = undefined
    this.#dataMore = undefined
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
