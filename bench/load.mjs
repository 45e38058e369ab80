// One load run; prints a JSON line {rps, p50, p99, requests, errors, non2xx, statuses, loader}.
// Usage: node load.mjs '<json spec>' where spec = {url, body | bodyFile, headers, connections, duration, idempotency, loader?}
// A large body (an agent-sized request) comes as `bodyFile`, the path of a file holding the exact bytes
// to send: an argument or environment string over 128 KB is refused by exec (E2BIG) on Linux.
//
// Loaders (spec.loader, else BENCH_LOADER, else the first available):
// - wrk: the native load generator (C, one event loop per thread), driven by bench/wrk/post.lua.
//   It costs ~15 µs of CPU per request on the shared core, autocannon several times that, so it is
//   the only one fast enough to measure the proxies rather than itself. Latency percentiles come
//   from wrk's histogram (µs, every response); non-2xx is wrk's count of status > 399 unless
//   BENCH_WRK_STATUS=1 (then every status is counted in Lua, which costs wrk ~2–4 µs per request).
//   BENCH_WRK_THREADS (default 1: wrk shares one core with the mock, a second thread adds nothing).
// - autocannon (bench/node_modules): the fallback when wrk is missing. On the shared core it caps
//   direct calls to the mock at a few thousand req/s, so every ratio it gives may be inflated.
// - builtin: a small closed-loop undici client with the same shape (also used when autocannon is
//   not installed).
// All are closed loops: `connections` keep-alive sockets, each sending the next request as soon as
// the previous response body has been read to its end. For autocannon and builtin, latency
// percentiles are computed here from every 2xx response time (float ms), not from autocannon's
// integer-ms histogram, so sub-millisecond differences are visible.
import { spawn, execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

let seq = 0
const idemKey = () => `bench-${process.pid}-${Date.now().toString(36)}-${seq++}`

function percentile (sorted, q) {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
}

function summary (latencies, requests, errors, non2xx, seconds, loader, statuses) {
  latencies.sort((a, b) => a - b)
  return {
    rps: requests / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    requests,
    errors,
    non2xx,
    statuses,
    loader,
  }
}

async function withAutocannon (autocannon) {
  const latencies = []
  const statuses = {}
  let responses = 0
  let non2xx = 0
  const result = await new Promise((resolve, reject) => {
    const instance = autocannon({
      url: spec.url,
      method: 'POST',
      connections: spec.connections,
      duration: spec.duration,
      pipelining: 1,
      headers,
      body,
      requests: spec.idempotency
        ? [{ setupRequest (req) { req.headers = { ...req.headers, 'idempotency-key': idemKey() }; return req } }]
        : undefined,
    }, (err, res) => err ? reject(err) : resolve(res))
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      responses++
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime)
      else non2xx++
    })
  })
  return summary(latencies, responses, result.errors + result.timeouts, non2xx, result.duration || spec.duration, 'autocannon', statuses)
}

async function withUndici () {
  const { Pool, request } = await import('undici')
  const url = new URL(spec.url)
  const pool = new Pool(url.origin, { connections: spec.connections, pipelining: 1, keepAliveTimeout: 30_000 })
  const latencies = []
  const statuses = {}
  let responses = 0
  let errors = 0
  let non2xx = 0
  const started = performance.now()
  const end = started + spec.duration * 1000
  const worker = async () => {
    while (performance.now() < end) {
      const h = spec.idempotency ? { ...headers, 'idempotency-key': idemKey() } : headers
      const t0 = performance.now()
      try {
        const res = await request(spec.url, { method: 'POST', headers: h, body, dispatcher: pool })
        for await (const _chunk of res.body) { /* read to the end, as a client would */ }
        const dt = performance.now() - t0
        responses++
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
        if (res.statusCode >= 200 && res.statusCode < 300) latencies.push(dt)
        else non2xx++
      } catch {
        errors++
      }
    }
  }
  await Promise.all(Array.from({ length: spec.connections }, worker))
  const seconds = (performance.now() - started) / 1000
  await pool.close()
  return summary(latencies, responses, errors, non2xx, seconds, 'undici-loop', statuses)
}

/** wrk with bench/wrk/post.lua; its done() prints one `WRK_JSON {...}` line. */
function withWrk () {
  const countStatus = process.env.BENCH_WRK_STATUS === '1'
  const threads = Math.max(1, Math.min(spec.connections, Number(process.env.BENCH_WRK_THREADS ?? 1)))
  const seconds = Math.max(1, Math.round(spec.duration)) // wrk takes whole seconds
  const script = join(dirname(fileURLToPath(import.meta.url)), 'wrk', 'post.lua')
  const env = {
    ...process.env,
    // A large body goes by file (post.lua reads it): an environment string is limited to 128 KB.
    ...(spec.bodyFile ? { WRK_BODY_FILE: spec.bodyFile } : { WRK_BODY: body }),
    WRK_HEADERS: Object.entries(spec.headers ?? {}).map(([k, v]) => `${k}: ${v}`).join('\n'),
    WRK_IDEMPOTENCY: spec.idempotency ? '1' : '0',
    WRK_NONCE: `bench-${process.pid}-${Date.now().toString(36)}`,
    WRK_STATUS: countStatus ? '1' : '0',
  }
  const args = ['-t', String(threads), '-c', String(spec.connections), '-d', `${seconds}s`, '--timeout', '10s', '-s', script, spec.url]
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', d => { out += d })
    child.stderr.on('data', d => { err += d })
    child.on('error', reject)
    child.on('exit', code => {
      const line = out.split('\n').find(l => l.startsWith('WRK_JSON '))
      if (code !== 0 || !line) return reject(new Error(`wrk exited ${code}: ${(err || out).slice(-500)}`))
      const r = JSON.parse(line.slice('WRK_JSON '.length))
      const e = r.errors
      const non2xx = countStatus ? r.non2xx : e.status
      resolve({
        rps: r.requests / (r.duration_us / 1e6),
        p50: r.p50_us / 1000,
        p99: r.p99_us / 1000,
        requests: r.requests,
        errors: e.connect + e.read + e.write + e.timeout,
        non2xx,
        statuses: countStatus ? r.statuses : (e.status ? { '>399': e.status } : {}),
        loader: 'wrk',
        threads,
      })
    })
  })
}

function hasWrk () {
  try { execFileSync('wrk', ['--version'], { stdio: 'ignore' }); return true } catch (err) { return err.code !== 'ENOENT' } // wrk --version exits 1
}

async function main () {
  let loader = spec.loader ?? process.env.BENCH_LOADER
  let autocannon
  if (!loader || loader === 'autocannon') {
    if (!loader && hasWrk()) loader = 'wrk'
    else {
      try { autocannon = (await import('autocannon')).default; loader = 'autocannon' } catch { loader = 'builtin' }
    }
  }
  return loader === 'wrk' ? withWrk() : autocannon ? withAutocannon(autocannon) : withUndici()
}

const spec = process.argv[2] ? JSON.parse(process.argv[2]) : undefined
const body = spec ? (spec.bodyFile ? readFileSync(spec.bodyFile) : JSON.stringify(spec.body)) : undefined
const headers = spec ? { 'content-type': 'application/json', ...spec.headers } : undefined
if (spec) process.stdout.write(JSON.stringify(await main()) + '\n')
