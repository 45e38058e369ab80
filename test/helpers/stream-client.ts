/**
 * @module test/helpers/stream-client – a raw HTTP client for streamed calls that counts the
 * generated characters it received and can hang up after some of them (a client that goes away).
 */
import { request as httpRequest } from 'node:http'
import { auth } from './build-test-app.ts'

export interface StreamResult {
  status: number
  traceId: string
  /** Characters of text and tool arguments received in delta events. */
  chars: number
  /** The whole body as received. */
  body: string
  /** true when the client hung up itself. */
  hungUp: boolean
}

/** Generated characters in one SSE frame of any of the protocols. */
function frameChars (frame: string): number {
  const data = frame.split(/\r?\n/).filter(l => l.startsWith('data:')).map(l => l.slice(5).trimStart()).join('\n')
  if (!data.startsWith('{')) return 0
  let j: any
  try { j = JSON.parse(data) } catch { return 0 }
  if (j.type === 'content_block_delta') return String(j.delta?.text ?? j.delta?.partial_json ?? j.delta?.thinking ?? '').length
  // Responses API: response.output_text.delta, response.function_call_arguments.delta, ...
  if (typeof j.type === 'string' && j.type.startsWith('response.') && j.type.endsWith('.delta') && typeof j.delta === 'string') return j.delta.length
  let n = 0
  for (const c of Array.isArray(j.choices) ? j.choices : []) {
    n += typeof c.delta?.content === 'string' ? c.delta.content.length : 0
    for (const tc of c.delta?.tool_calls ?? []) n += typeof tc.function?.arguments === 'string' ? tc.function.arguments.length : 0
  }
  return n
}

/** POSTs a streamed call; with `hangUpAfterChars`, destroys the socket once that many characters arrived. */
export function streamCall (base: string, path: string, body: unknown, opts: { hangUpAfterChars?: number, timeoutMs?: number } = {}): Promise<StreamResult> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' } }, res => {
      const r: StreamResult = { status: res.statusCode ?? 0, traceId: String(res.headers['x-gw-trace-id']), chars: 0, body: '', hungUp: false }
      let pending = ''
      res.setEncoding('utf8')
      res.on('data', (s: string) => {
        if (r.hungUp) return
        r.body += s
        pending += s
        const frames = pending.split(/\r?\n\r?\n/)
        pending = frames.pop()!
        for (const f of frames) r.chars += frameChars(f)
        if (opts.hangUpAfterChars !== undefined && r.chars >= opts.hangUpAfterChars) {
          r.hungUp = true
          req.destroy()
          resolve(r)
        }
      })
      res.on('end', () => resolve(r))
      res.on('error', () => resolve(r))
    })
    req.on('error', reject) // a no-op once resolved (our own hang-up)
    req.setTimeout(opts.timeoutMs ?? 15_000, () => { req.destroy(); reject(new Error('stream call timed out')) })
    req.end(JSON.stringify(body))
  })
}
