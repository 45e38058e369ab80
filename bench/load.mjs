// One load run; prints a JSON line {rps, p50, p99, requests, errors, non2xx, loader}.
// Usage: node load.mjs '<json spec>' where spec = {url, body, headers, connections, duration, idempotency}
//
// Uses autocannon (bench/node_modules) when it is installed; otherwise (or with BENCH_LOADER=builtin)
// a small closed-loop undici client with the same shape: `connections` keep-alive sockets, each
// sending the next request as soon as the previous response body has been read to its end.
// Latency percentiles are computed here from every 2xx response time (float ms), not from
// autocannon's integer-ms histogram, so sub-millisecond differences are visible.

const spec = JSON.parse(process.argv[2])
const body = JSON.stringify(spec.body)
const headers = { 'content-type': 'application/json', ...spec.headers }
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

let autocannon
if (process.env.BENCH_LOADER !== 'builtin') {
  try { autocannon = (await import('autocannon')).default } catch { autocannon = undefined }
}
const out = autocannon ? await withAutocannon(autocannon) : await withUndici()
process.stdout.write(JSON.stringify(out) + '\n')
