/**
 * @module sse-writer – the one serializer of a stream's client events (what stream translators
 * emit) into server-sent-events text, with the raw-bytes relay of a same-protocol stream.
 */
import type { EventSink, SseEvent, StreamTranslator } from './provider.ts'
import { sseData, sseEvent, SSE_DONE } from './sse.ts'

/** The text of one built event: `event: <name>\ndata: <json>\n\n`, or `data: <json>\n\n` when unnamed. */
export function sseText (name: string | undefined, data: unknown): string {
  return name === undefined ? sseData(data) : sseEvent(name, data)
}

const NO_EVENTS: readonly SseEvent[] = []

/**
 * Serializes the events a stream translator emits into text, collected until `take`. Used whole
 * by `chunk`, it forwards the upstream's own bytes while the translator relays each event of a
 * chunk as it came or drops it (a same-protocol stream), so its text is neither concatenated nor
 * encoded again. One writer per stream; not shared.
 */
export class SseWriter implements EventSink {
  /** Text of the events written since the last `take`. */
  #text = ''
  /** While a whole chunk is relayed as its bytes: the chunk (undefined: events are written as text). */
  #chunk: Buffer | undefined = undefined
  #events: readonly SseEvent[] = NO_EVENTS
  /** The event of `#events` being translated, and whether it was relayed as it came. */
  #i = 0
  #kept = false
  /**
   * Once an event of the chunk is dropped: the kept events' byte ranges so far, where the run of
   * kept events that is still open starts, and where the event being translated starts (a whole
   * chunk's events are its bytes end to end, so their offsets are the sums of their UTF-8 lengths).
   */
  #pieces: Buffer[] | undefined = undefined
  #from = 0
  #at = 0

  event (name: string | undefined, data: object): void {
    if (this.#chunk !== undefined) this.#toText()
    this.#text += sseText(name, data)
  }

  done (): void {
    if (this.#chunk !== undefined) this.#toText()
    this.#text += SSE_DONE
  }

  relay (ev: SseEvent): void {
    if (this.#chunk !== undefined) {
      if (ev === this.#events[this.#i] && !this.#kept) {
        this.#kept = true
        return
      }
      this.#toText()
    }
    this.#text += ev.raw
  }

  /** The text written since the last call ('' for none). */
  take (): string {
    const t = this.#text
    this.#text = ''
    return t
  }

  /**
   * What one upstream chunk becomes for the client through `st`. A chunk that is exactly whole
   * events (`whole`, nothing written before it untaken) goes out as the upstream's bytes for as
   * long as the translator relays each event as it came or drops it (a usage chunk the client did
   * not ask for): the chunk itself, or the byte ranges of the events kept (text when the chunk
   * holds bytes that are not UTF-8). The first event it changes turns the rest into text, starting
   * with what was kept before it.
   */
  chunk (chunk: Buffer, events: readonly SseEvent[], st: StreamTranslator, whole: boolean): string | Buffer {
    if (!whole || this.#text !== '') {
      for (let i = 0; i < events.length; i++) st.push(events[i], this)
      return this.take()
    }
    this.#chunk = chunk
    this.#events = events
    this.#pieces = undefined
    this.#from = 0
    this.#at = 0
    try {
      for (let i = 0; i < events.length; i++) {
        this.#i = i
        this.#kept = false
        st.push(events[i], this)
        // Turned into text during this event: the rest are written as text.
        if (this.#chunk === undefined) continue
        const size = this.#pieces !== undefined || !this.#kept ? Buffer.byteLength(events[i].raw) : 0
        if (this.#kept) {
          this.#at += size
          continue
        }
        let pieces = this.#pieces
        if (pieces === undefined) {
          // Byte ranges are sums of the events' UTF-8 lengths: exact only when the chunk decoded to
          // itself. A byte that is not UTF-8 decodes to U+FFFD (three bytes), so the ranges would
          // cut the kept events late: text from here on instead.
          let before = 0
          let bytes = 0
          for (let k = 0; k < events.length; k++) {
            if (k === i) before = bytes
            bytes += Buffer.byteLength(events[k].raw)
          }
          if (bytes !== chunk.length) {
            this.#toText()
            continue
          }
          pieces = this.#pieces = []
          this.#at += before
        }
        if (this.#at > this.#from) pieces.push(chunk.subarray(this.#from, this.#at))
        this.#at += size
        this.#from = this.#at
      }
    } catch (err) {
      this.#reset()
      this.#text = ''
      throw err
    }
    if (this.#chunk === undefined) return this.take()
    const pieces = this.#pieces
    const from = this.#from
    const at = this.#at
    this.#reset()
    if (pieces === undefined) return chunk
    if (at > from) pieces.push(chunk.subarray(from, at))
    return pieces.length === 1 ? pieces[0] : Buffer.concat(pieces)
  }

  #reset (): void {
    this.#chunk = undefined
    this.#events = NO_EVENTS
    this.#pieces = undefined
  }

  /** The translator changed an event of a whole chunk: text from here on, starting with what was kept before it. */
  #toText (): void {
    const chunk = this.#chunk!
    const events = this.#events
    const i = this.#i
    let text = ''
    if (this.#pieces === undefined) {
      for (let k = 0; k < i; k++) text += events[k].raw
    } else {
      if (this.#at > this.#from) this.#pieces.push(chunk.subarray(this.#from, this.#at))
      text = Buffer.concat(this.#pieces).toString('utf8')
    }
    if (this.#kept) text += events[i].raw
    this.#text = text
    this.#reset()
  }
}
