/**
 * @module test/helpers/fuzz-answers – what the upstream-answer fuzzers share: the script a
 * loopback upstream plays (status, headers, writes, how it closes), random write boundaries, and
 * the mutations of a valid answer, each fuzzer bringing its wire's own events, error events,
 * statuses and content types.
 */
import type { ServerResponse } from 'node:http'
import { DELETE, get, pathsOf, setPath, type Obj } from './fuzz.ts'

/** The script of one upstream answer: status, headers, the bytes written (each its own write), and how it ends. */
export interface Script {
  status: number
  headers: Record<string, string>
  writes: Uint8Array[]
  /** 'end': the response ends; 'destroy': the socket is destroyed after the writes. */
  close: 'end' | 'destroy'
}

/** One event of an answer: its name on the wire ('' for an unnamed one, '!raw' for bytes written as they are) and its payload. */
export type Ev = [string, Obj | string]

/** Plays `script` on `res`: one write each, waiting for each to be flushed; 500 without a script. */
export async function play (res: ServerResponse, script: Script | undefined): Promise<void> {
  if (script === undefined) { res.writeHead(500).end(); return }
  res.writeHead(script.status, script.headers)
  for (const w of script.writes) {
    if (res.destroyed) return
    await new Promise<void>(resolve => res.write(w, () => resolve()))
  }
  if (script.close === 'destroy') res.socket?.destroy()
  else res.end()
}

/** Cuts bytes in pieces at random positions (a proxy's or the network's framing). */
export function split (bytes: Uint8Array, rnd: () => number): Uint8Array[] {
  const out: Uint8Array[] = []
  let off = 0
  const n = rnd() < 0.3 ? 1 : 1 + Math.floor(rnd() * 8)
  const cuts = [...new Set(Array.from({ length: n - 1 }, () => Math.floor(rnd() * bytes.length)))].sort((a, b) => a - b)
  for (const c of [...cuts, bytes.length]) {
    if (c > off) out.push(bytes.subarray(off, c))
    off = c
  }
  return out.length ? out : [bytes]
}

/** `b` with every `from` replaced by `to`. */
function replaceAll (b: Buffer, from: Buffer, to: Buffer): Buffer {
  const out: Buffer[] = []
  let at = 0
  for (let i = b.indexOf(from); i >= 0; i = b.indexOf(from, at)) {
    out.push(b.subarray(at, i), to)
    at = i + from.length
  }
  out.push(b.subarray(at))
  return Buffer.concat(out)
}

/** Stands for bytes that are not UTF-8 in a string until the answer is bytes (replaceAll). */
const NOT_UTF8 = '@@not-utf8@@'

/** What a wire brings to the mutations: its odd values, events, statuses and content types. */
export interface Wire {
  /** A value that does not belong where it is put (or DELETE). */
  odd (): unknown
  /** An event the wire does not define, or a comment. */
  unknownEvent (): Ev
  /** An error event as the wire sends one inside a stream, and its description. */
  errorEvent (): [Ev, string]
  /** Statuses an answer may come with instead of 200. */
  statuses: readonly number[]
  /** Changes headers and events that go with another status (an error body...); what was changed, or ''. */
  withStatus (headers: Record<string, string>, events: Ev[]): string
  contentTypes: readonly string[]
  /** Payloads that are not the wire's JSON. */
  junk: readonly string[]
  /** Also put bytes that are not UTF-8 inside strings (the JSON still parses: a decoder makes them U+FFFD). */
  notUtf8?: boolean
}

/** How a script ends after its mutations: its status, how it closes, and what is done to its bytes. */
export interface Mutated { status: number, close: Script['close'], bytes: (b: Buffer) => Buffer }

/**
 * Changes `events` (and `headers`) by `n` random mutations, each described in `changes`: an odd
 * value at a random path, bytes that are not UTF-8, an event dropped, repeated, swapped or
 * unknown, an error event, a payload that is not JSON, the bytes truncated, cut or corrupted, a
 * content type or status of another kind.
 */
export function mutate (rnd: () => number, wire: Wire, events: Ev[], headers: Record<string, string>, stream: boolean, n: number, changes: string[]): Mutated {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!
  const int = (k: number): number => Math.floor(rnd() * k)
  let close: Script['close'] = 'end'
  let status = 200
  let byteOp: ((b: Buffer) => Buffer) | undefined
  const utf8 = wire.notUtf8 === true ? ['notUtf8'] as const : []
  for (; n > 0; n--) {
    const kind = stream
      ? pick(['value', 'value', 'value', 'value', 'drop', 'repeat', 'swap', 'unknown', 'truncate', 'cut', 'corrupt', ...utf8, 'exception', 'notJson', 'headers', 'status'] as const)
      : pick(['value', 'value', 'value', 'value', 'value', 'truncate', 'cut', 'corrupt', ...utf8, 'notJson', 'headers', 'status'] as const)
    const i = int(events.length)
    const ev = events[i]!
    const where = stream ? `event ${i} (${ev[0]}) ` : ''
    switch (kind) {
      case 'value': {
        if (typeof ev[1] === 'string') break
        const paths = pathsOf(ev[1])
        if (paths.length === 0) break
        const p = pick(paths)
        const v = wire.odd()
        setPath(ev[1], p, v)
        changes.push(`${where}${p.join('.')} = ${v === DELETE ? '(deleted)' : JSON.stringify(v)?.slice(0, 40)}`)
        break
      }
      case 'notUtf8': {
        if (typeof ev[1] === 'string') break
        const strings = pathsOf(ev[1]).filter(p => typeof get(ev[1], ...p) === 'string')
        if (strings.length === 0) break
        const p = pick(strings)
        const bad = pick([[0xf5], [0x80], [0xc3], [0xe4, 0xb8], [0xf0, 0x9f, 0x98], [0xff, 0xfe]])
        setPath(ev[1], p, String(get(ev[1], ...p)) + NOT_UTF8)
        const prev = byteOp
        byteOp = b => replaceAll(prev ? prev(b) : b, Buffer.from(NOT_UTF8), Buffer.from(bad))
        changes.push(`${where}${p.join('.')} + bytes ${Buffer.from(bad).toString('hex')}`)
        break
      }
      case 'drop': events.splice(i, 1); changes.push(`event ${i} (${ev[0]}) dropped`); break
      case 'repeat': events.splice(i, 0, structuredClone(ev)); changes.push(`event ${i} (${ev[0]}) repeated`); break
      case 'swap': {
        if (i + 1 >= events.length) break
        events.splice(i, 2, events[i + 1]!, ev)
        changes.push(`events ${i} and ${i + 1} swapped`)
        break
      }
      case 'unknown': {
        const e = wire.unknownEvent()
        events.splice(i, 0, e)
        changes.push(`unknown event ${JSON.stringify(e).slice(0, 80)} at ${i}`)
        break
      }
      case 'exception': {
        const [e, what] = wire.errorEvent()
        events.splice(i, 0, e)
        changes.push(`error event ${what} at ${i}`)
        break
      }
      case 'notJson': {
        const junk = pick(wire.junk)
        if (stream) events[i] = [ev[0], junk]
        else events[0] = ['', junk]
        changes.push(`${stream ? `event ${i} (${ev[0]}) payload` : 'body'} = ${JSON.stringify(junk)}`)
        break
      }
      case 'truncate': {
        const prev = byteOp
        byteOp = b => { const c = prev ? prev(b) : b; return c.subarray(0, int(c.length)) }
        changes.push('the body truncated')
        break
      }
      case 'cut': close = 'destroy'; byteOp ??= b => b.subarray(0, int(b.length + 1)); changes.push('the connection closed early'); break
      case 'corrupt': {
        const prev = byteOp
        byteOp = b => { const c = Buffer.from(prev ? prev(b) : b); if (c.length) c[int(c.length)] ^= 1 << int(8); return c }
        changes.push('a byte flipped')
        break
      }
      case 'status': {
        status = pick(wire.statuses)
        if (rnd() < 0.5) headers['retry-after'] = pick(['1', '-1', 'soon', '99999999999', '1.5'])
        const more = wire.withStatus(headers, events)
        changes.push(`status ${status} ${JSON.stringify(headers)}${more}`)
        break
      }
      case 'headers': {
        const ct = pick(wire.contentTypes)
        headers['content-type'] = ct
        changes.push(`content-type ${ct}`)
        break
      }
    }
  }
  return { status, close, bytes: b => byteOp ? byteOp(b) : b }
}
