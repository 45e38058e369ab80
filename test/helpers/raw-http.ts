/** @module test/helpers/raw-http – HTTP/1.1 by hand over node:net: slow, malformed or oversized requests. */
import { connect, type Socket } from 'node:net'

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
  /** The whole text received. */
  raw: string
  /** Socket errors seen while writing or reading (EPIPE, ECONNRESET...). */
  errors: string[]
  /** true once the server closed the connection (within the wait). */
  closed: boolean
}

/** Parses one response off the front of `raw` (latin1: one char a byte; Content-Length or chunked); undefined while incomplete. */
export function parseResponse (raw: string): { status: number, headers: Record<string, string>, body: string } | undefined {
  const end = raw.indexOf('\r\n\r\n')
  if (end < 0) return undefined
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n')
  const headers: Record<string, string> = {}
  for (const l of lines) {
    const i = l.indexOf(':')
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim()
  }
  let rest = raw.slice(end + 4)
  let body: string
  if (headers['transfer-encoding'] === 'chunked') {
    body = ''
    for (;;) {
      const nl = rest.indexOf('\r\n')
      if (nl < 0) return undefined
      const size = parseInt(rest.slice(0, nl), 16)
      if (size === 0) break
      if (rest.length < nl + 2 + size + 2) return undefined
      body += rest.slice(nl + 2, nl + 2 + size)
      rest = rest.slice(nl + 2 + size + 2)
    }
  } else {
    const len = Number(headers['content-length'] ?? 0)
    if (rest.length < len) return undefined
    body = rest.slice(0, len)
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: Buffer.from(body, 'latin1').toString('utf8') }
}

export interface RawOptions {
  /** Written first, at once. */
  head: string | Buffer
  /** Then these pieces, `gapMs` apart (a slow client). */
  pieces?: (string | Buffer)[]
  gapMs?: number
  /** Then this many filler bytes as fast as the socket takes them (an oversized body). */
  flood?: number
  /** Resolve once a response arrived and the whole flood was written (the server read it all). */
  untilFlooded?: boolean
  /** How long to wait, at most, for the server to close the connection after a response. */
  waitCloseMs?: number
  /** Bound on the whole exchange. */
  maxMs?: number
}

/** Sends a request by hand; resolves once a response arrived and the socket closed, or at `maxMs`. */
export function rawRequest (port: number, opts: RawOptions): Promise<RawResponse> {
  return new Promise(resolve => {
    const sock: Socket = connect(port, '127.0.0.1')
    const errors: string[] = []
    let raw = ''
    let closed = false
    let finished = false
    let stopWriting = false
    let flooded = false
    const timers: NodeJS.Timeout[] = []
    const finish = (): void => {
      if (finished) return
      finished = true
      stopWriting = true
      for (const tm of timers) clearTimeout(tm)
      sock.destroy()
      const parsed = parseResponse(raw)
      resolve({ status: parsed?.status ?? 0, headers: parsed?.headers ?? {}, body: parsed?.body ?? '', raw, errors, closed })
    }
    timers.push(setTimeout(finish, opts.maxMs ?? 15_000))
    sock.setEncoding('latin1')
    sock.on('data', (d: string) => {
      raw += d
      if (opts.untilFlooded && flooded && parseResponse(raw)) finish()
      if (opts.waitCloseMs !== undefined && parseResponse(raw)) timers.push(setTimeout(finish, opts.waitCloseMs))
    })
    sock.on('error', err => { errors.push((err as NodeJS.ErrnoException).code ?? err.message) })
    sock.on('close', () => { closed = true; finish() })
    sock.on('connect', async () => {
      sock.write(opts.head)
      for (const p of opts.pieces ?? []) {
        await new Promise(r => timers.push(setTimeout(r, opts.gapMs ?? 0)))
        if (stopWriting || sock.destroyed) return
        sock.write(p)
      }
      let left = opts.flood ?? 0
      const chunk = Buffer.alloc(64 * 1024, 0x20)
      const pump = (): void => {
        while (left > 0 && !stopWriting && !sock.destroyed) {
          const n = Math.min(left, chunk.length)
          left -= n
          if (!sock.write(n === chunk.length ? chunk : chunk.subarray(0, n))) { sock.once('drain', pump); return }
        }
        if (left > 0) return
        // The last chunk is handed to the kernel once the write callback runs.
        sock.write('', () => {
          flooded = true
          if (opts.untilFlooded && parseResponse(raw)) finish()
        })
      }
      pump()
    })
  })
}

/** The head of a request: request line and headers, CRLF-framed. */
export function head (method: string, path: string, headers: Record<string, string | number> = {}): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)]
  return lines.join('\r\n') + '\r\n\r\n'
}
