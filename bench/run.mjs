// Benchmark harness: mock upstream, direct, bare proxy, gateway (embedded and scale-out) and Portkey,
// side by side in ONE run on loopback. Writes BENCHMARKS.md.
//
// Env: BENCH_DURATION (s per measured run, default 5), BENCH_RUNS (default 3; the median run by req/s
// is reported), BENCH_WARMUP (s, default 1), BENCH_OUT (default BENCHMARKS.md), BENCH_SYSTEMS (comma
// list of system ids: direct,bare,embedded,embedded-obs-off,embedded-obs-on,scaleout,scaleout-exact,portkey; the
// two obs systems are the embedded gateway with observability off and fully on; the opt-in
// embedded-young16 is the embedded gateway with a 16 MB young generation), BENCH_PROFILE (1 = also profile the
// gateways with --cpu-prof and add their top self-time functions; default 1 for a full run, 0
// when BENCH_SYSTEMS is set), BENCH_PROFILE_CASES (default bare:json-c16,embedded:json-c16,
// scaleout:json-c16,bare:sse-c16,embedded:sse-c16), BENCH_PROFILE_SECONDS,
// BENCH_PG_URL, BENCH_REDIS_URL, BENCH_LOADER (wrk, autocannon or builtin; default wrk, see below),
// BENCH_INSTALL_WRK=0 (never install wrk), BENCH_WRK_THREADS, BENCH_WRK_STATUS (see bench/load.mjs),
// BENCH_ALLOC_CALLS (calls per kind for the allocation section, bench/alloc.mjs; default 3000),
// BENCH_HOOKS (0 = skip the response-hooks section, bench/hooks-cost.mjs; it runs whenever the
// embedded gateway is measured), BENCH_HOOKS_SECONDS (default BENCH_DURATION), BENCH_HOOKS_ROUNDS (default BENCH_RUNS),
// BENCH_HOOKS_BASELINE (dist/ of a build from before response hooks, measured beside this one),
// BENCH_CASES (comma list of case ids, default all: json-c1,json-c16,json-c64,sse-c16,xsse-c16 and the
// agent-sized ones agent-json-c1, agent-json-c8, agent-sse-c1, agent-sse-c8 on chat completions and
// agent-msg-json-c1, agent-msg-json-c8, agent-msg-sse-c1, agent-msg-sse-c8 on messages; see
// bench/agent-body.mjs), BENCH_INSTALL_NGINX=0 (never install nginx; the nginx system is then
// skipped when it is missing), BENCH_BASE_DIST (the dist/ of another build: the opt-in systems
// embedded-base and scaleout-base run it beside this one, for before/after figures).
// `node bench/run.mjs --render [results.json]` rewrites the report from bench/results/last-run.json (or the file given).
//
// Load generator: wrk (native). When it is not on PATH and this process is root, it is installed
// from the Debian packages (apt-get update && apt-get install -y wrk); otherwise the harness says
// how to install it and falls back to autocannon (or, without bench/node_modules, the builtin undici
// loop), labelled "fallback: ratios may be inflated" in the console and the report.
//
// Node: every Node-based system (bare proxy, gateways, Portkey) and every helper runs on the project's
// Node (node_modules/node, the `node` package npm scripts put first on PATH) whatever node started this
// script, with the node flags of `npm start`. nginx (Debian package, one worker process, pinned like the
// others) is the floor of any proxy.
//
// Validity: the load generator and the mock share core 1, so they must have room to spare when a
// proxy is measured. Direct-to-mock must be at least 2x the bare proxy at the same concurrency in
// every case measured on both; otherwise the run is marked INVALID (console and top of the report).
import { spawn, spawnSync, execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync, mkdtempSync, existsSync, rmSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { tmpdir, cpus, totalmem } from 'node:os'
import { join, resolve, dirname, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { summarize } from './cpuprofile-summary.mjs'
import { agentChatBody, agentMessagesBody } from './agent-body.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const root = resolve(here, '..')
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1)
const OUT = resolve(root, process.env.BENCH_OUT ?? 'BENCHMARKS.md')
const ONLY = process.env.BENCH_SYSTEMS ? process.env.BENCH_SYSTEMS.split(',').map(s => s.trim()) : undefined
const PROFILE = process.env.BENCH_PROFILE ? process.env.BENCH_PROFILE === '1' : !ONLY
// Entries are `<system>:<case>` (embedded or scaleout) or a bare case id (embedded).
const PROFILE_CASES = (process.env.BENCH_PROFILE_CASES ?? 'bare:json-c16,embedded:json-c16,scaleout:json-c16,bare:sse-c16,embedded:sse-c16,bare:agent-json-c8,embedded:agent-json-c8').split(',').map(s => s.trim())
  .map(x => x.includes(':') ? { sys: x.split(':')[0], id: x.split(':')[1] } : { sys: 'embedded', id: x })
const PROFILE_SECONDS = Number(process.env.BENCH_PROFILE_SECONDS ?? Math.max(DURATION, 5))
const KEY = 'sk-gw-bench-key-0001'
/** The project's Node 24 (node_modules/node), else the node running this script. */
const NODE = (() => { const p = join(root, 'node_modules/node/bin/node'); return existsSync(p) ? p : process.execPath })()
const NODE_VERSION = (() => { try { return execFileSync(NODE, ['--version'], { encoding: 'utf8' }).trim() } catch { return process.version } })()
/** Every Node-based system runs with the node flags of `npm start` (package.json), as an operator would run the gateway. */
const GATEWAY_NODE_FLAGS = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.start.match(/^node\s+(.*?)\s*dist\/server\.js$/)?.[1] ?? '').split(/\s+/).filter(Boolean)
const hasTaskset = (() => { try { execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' }); return cpus().length > 1 } catch { return false } })()
const pin = (core, cmd, args) => hasTaskset ? ['taskset', ['-c', String(core), cmd, ...args]] : [cmd, args]
const log = (...a) => process.stderr.write(`[bench] ${a.join(' ')}\n`)

// ---------------------------------------------------------------------------------------------
// Load generator

const onPath = cmd => { try { execFileSync(cmd, ['--version'], { stdio: 'ignore' }); return true } catch (err) { return err.code !== 'ENOENT' } } // wrk --version exits 1
const HOW_TO_INSTALL_WRK = 'install wrk and rerun: `sudo apt-get install wrk` (Debian, Ubuntu), `brew install wrk` (macOS), or build it from https://github.com/wg/wrk'

/** Which load generator to use: wrk (installed here when missing and root), else a labelled fallback. */
function chooseLoader () {
  const forced = process.env.BENCH_LOADER
  const fallbackTo = existsSync(join(here, 'node_modules/autocannon')) ? 'autocannon' : 'builtin'
  if (forced === 'autocannon' || forced === 'builtin') {
    const loader = forced === 'autocannon' ? fallbackTo : 'builtin'
    return { loader, fallback: true, why: `BENCH_LOADER=${forced}` }
  }
  if (forced && forced !== 'wrk') throw new Error(`BENCH_LOADER=${forced}: expected wrk, autocannon or builtin`)
  if (!onPath('wrk') && process.getuid?.() === 0 && process.env.BENCH_INSTALL_WRK !== '0') {
    log('wrk is not on PATH; installing it: apt-get update && apt-get install -y wrk')
    const r = spawnSync('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk'], { stdio: ['ignore', 2, 2] })
    if (r.status !== 0) log(`installing wrk failed (exit ${r.status})`)
  }
  if (onPath('wrk')) {
    const version = (spawnSync('wrk', ['--version'], { encoding: 'utf8' }).stdout ?? '').split('\n')[0].replace(/\s*Copyright.*$/, '').trim()
    return { loader: 'wrk', fallback: false, version, threads: Number(process.env.BENCH_WRK_THREADS ?? 1), countStatus: process.env.BENCH_WRK_STATUS === '1' }
  }
  if (forced === 'wrk') throw new Error(`BENCH_LOADER=wrk but wrk is not on PATH: ${HOW_TO_INSTALL_WRK}`)
  return { loader: fallbackTo, fallback: true, why: `wrk is not installed; ${HOW_TO_INSTALL_WRK}` }
}
const fallbackLabel = info => `${info.loader === 'builtin' ? 'builtin undici loop' : info.loader} fallback: ratios may be inflated`

// ---------------------------------------------------------------------------------------------
// nginx (the floor of any proxy)

const HOW_TO_INSTALL_NGINX = 'install it and rerun: `sudo apt-get install nginx`; BENCH_INSTALL_NGINX=0 never installs it'

/** The nginx binary: on PATH or /usr/sbin; installed from the Debian packages when missing and root (unless BENCH_INSTALL_NGINX=0). */
function nginxBinary () {
  const find = () => ['nginx', '/usr/sbin/nginx'].find(b => spawnSync(b, ['-v'], { stdio: 'ignore' }).status === 0)
  let bin = find()
  if (!bin && process.getuid?.() === 0 && process.env.BENCH_INSTALL_NGINX !== '0') {
    log('nginx is not installed; installing it: apt-get update && apt-get install -y nginx')
    const r = spawnSync('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx'], { stdio: ['ignore', 2, 2] })
    if (r.status !== 0) log(`installing nginx failed (exit ${r.status})`)
    bin = find()
  }
  return bin
}

/**
 * One nginx process (master_process off: the process that serves is the one pinned and measured),
 * keep-alive to the client and to the mock, the request body buffered in memory (1 MB: an
 * agent-sized body never goes to a temp file), the response relayed unbuffered (streams as they come).
 */
function nginxConf (dir, port, mockPort) {
  return `master_process off;
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_max_body_size 64m;
  client_body_buffer_size 1m;
  keepalive_requests 10000000;
  keepalive_timeout 60s;
  upstream mock { server 127.0.0.1:${mockPort}; keepalive 256; keepalive_requests 10000000; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://mock;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`
}

// ---------------------------------------------------------------------------------------------
// Processes

const children = new Set()

function freePort () {
  return new Promise((res, rej) => {
    const s = createServer()
    s.once('error', rej)
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)) })
  })
}

function httpStatus (port, path = '/') {
  return new Promise(res => {
    const sock = connect({ host: '127.0.0.1', port }, () => sock.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`))
    let buf = ''
    sock.setTimeout(2000, () => { sock.destroy(); res(0) })
    sock.on('data', d => { buf += d; const m = /^HTTP\/1\.1 (\d+)/.exec(buf); if (m) { sock.destroy(); res(Number(m[1])) } })
    sock.on('error', () => res(0))
    sock.on('close', () => res(0))
  })
}

/** Spawns a server pinned to `core`, listening on `port`; resolves once it answers HTTP. */
async function start (name, core, cmd, args, env, port, readyPath = '/') {
  const [c, a] = pin(core, cmd, args)
  const spawnedAt = Date.now()
  const child = spawn(c, a, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let out = ''
  const keep = d => { out = (out + d).slice(-4000) } // always drained: a full pipe would stall the child
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  let exited = null
  child.on('exit', code => { exited = code ?? 'signal'; children.delete(child) })
  const until = Date.now() + 60_000
  while (Date.now() < until) {
    if (exited !== null) throw new Error(`${name} exited (${exited}): ${out.trim().split('\n').slice(-3).join(' | ')}`)
    const status = await httpStatus(port, readyPath)
    if (status >= 200 && status < 500) return { port, child, output: () => out, startupMs: Date.now() - spawnedAt }
    await new Promise(r => setTimeout(r, 100))
  }
  child.kill('SIGKILL')
  throw new Error(`${name} did not answer on port ${port} within 60 s: ${out.slice(-500)}`)
}

function stop (proc, signal = 'SIGKILL') {
  if (!proc?.child || proc.child.exitCode !== null) return Promise.resolve()
  return new Promise(res => { proc.child.once('exit', res); proc.child.kill(signal) })
}

function peakRssMb (pid) {
  // taskset execs the target, so the pid is the target's.
  try { return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024 } catch { return NaN }
}

/** CPU time (user + system) the process has used so far, in ms (clock ticks of 10 ms). */
function cpuMs (pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(f[11]) + Number(f[12])) * 10 // utime, stime (fields 14, 15); USER_HZ is 100 on Linux
  } catch { return NaN }
}

/** Large bodies written once to files (an argument over 128 KB is refused by exec): JSON text → path. */
const bodyFiles = new Map()
let bodyDir
/** The spec with a large body replaced by the path of a file holding its bytes (bench/load.mjs reads it). */
function bodyByFile (spec) {
  const text = JSON.stringify(spec.body)
  if (text.length <= 16_384) return spec
  let file = bodyFiles.get(text)
  if (file === undefined) {
    bodyDir ??= mkdtempSync(join(tmpdir(), 'gw-bench-body-'))
    file = join(bodyDir, `body-${bodyFiles.size}.json`)
    writeFileSync(file, text)
    bodyFiles.set(text, file)
  }
  const { body: _body, ...rest } = spec
  return { ...rest, bodyFile: file }
}
process.on('exit', () => { if (bodyDir) rmSync(bodyDir, { recursive: true, force: true }) })

/** One load run (bench/load.mjs) on core 1; resolves its JSON summary. */
function load (spec) {
  const [c, a] = pin(1, NODE, [join(here, 'load.mjs'), JSON.stringify({ loader: LOADER.loader, ...bodyByFile(spec) })])
  return new Promise((res, rej) => {
    const child = spawn(c, a, { cwd: here, stdio: ['ignore', 'pipe', 'pipe'] })
    children.add(child)
    let out = ''
    let err = ''
    child.stdout.on('data', d => { out += d })
    child.stderr.on('data', d => { err = (err + d).slice(-2000) })
    child.on('exit', code => {
      children.delete(child)
      if (code !== 0) return rej(new Error(`load.mjs exited ${code}: ${err}`))
      try { res(JSON.parse(out.trim().split('\n').at(-1))) } catch { rej(new Error(`load.mjs output: ${out.slice(-500)} ${err}`)) }
    })
  })
}

/** One request, read whole: checks the system answers the case correctly before it is loaded. */
async function probe (url, body, headers) {
  const { request } = await import('undici')
  try {
    const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
    return { status: res.statusCode, text: await res.body.text() }
  } catch (err) {
    return { status: 0, text: err.message }
  }
}

const median = xs => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

// ---------------------------------------------------------------------------------------------
// What is measured

const chatBody = { model: 'bench/chat', messages: [{ role: 'user', content: 'Say twenty words.' }], max_tokens: 64 }
const agentChat = agentChatBody('bench/chat')
const agentMessages = agentMessagesBody('bench/messages')
const CASES = [
  { id: 'json-c1', label: 'JSON chat, c=1', connections: 1, path: '/v1/chat/completions', body: chatBody, expect: /"choices"/ },
  { id: 'json-c16', label: 'JSON chat, c=16', connections: 16, path: '/v1/chat/completions', body: chatBody, expect: /"choices"/ },
  { id: 'json-c64', label: 'JSON chat, c=64', connections: 64, path: '/v1/chat/completions', body: chatBody, expect: /"choices"/ },
  { id: 'sse-c16', label: 'streaming chat, c=16', connections: 16, path: '/v1/chat/completions', body: { ...chatBody, stream: true }, expect: /data: \[DONE\]/ },
  // POST /v1/messages on a model whose upstream speaks chat completions: the gateway translates both ways.
  { id: 'xsse-c16', label: 'cross-protocol streaming (POST /v1/messages → chat upstream), c=16', connections: 16, path: '/v1/messages', body: { ...chatBody, stream: true }, expect: /event: message_stop/, cross: true },
  // Agent-sized requests (bench/agent-body.mjs, ~145 KB): same protocol on both routes, so every
  // proxy passes them through; what a coding agent sends on every turn.
  ...[1, 8].flatMap(n => [
    { id: `agent-json-c${n}`, label: `agent chat (145 KB), JSON, c=${n}`, connections: n, path: '/v1/chat/completions', body: agentChat, expect: /"choices"/, agent: true },
    { id: `agent-sse-c${n}`, label: `agent chat (145 KB), streaming, c=${n}`, connections: n, path: '/v1/chat/completions', body: { ...agentChat, stream: true }, expect: /data: \[DONE\]/, agent: true },
    { id: `agent-msg-json-c${n}`, label: `agent messages (145 KB), JSON, c=${n}`, connections: n, path: '/v1/messages', body: agentMessages, expect: /"content"/, agent: true, messages: true },
    { id: `agent-msg-sse-c${n}`, label: `agent messages (145 KB), streaming, c=${n}`, connections: n, path: '/v1/messages', body: { ...agentMessages, stream: true }, expect: /event: message_stop/, agent: true, messages: true },
  ]),
].filter(c => !process.env.BENCH_CASES || process.env.BENCH_CASES.split(',').map(x => x.trim()).includes(c.id))

/**
 * VACUUM (ANALYZE) of the scale-out schema's tables, before each case's gateway starts. Every
 * call inserts, resizes and deletes a hold row, so a case leaves tens of thousands of dead rows
 * behind. A PostgreSQL with autovacuum on (its default) clears them within a minute; with it off
 * (this project's CI machines), they pile up across cases and every later reserve walks them:
 * exact mode at JSON c=16 fell from about 2000 to 412 req/s within one run. Each case thus starts
 * from the tables autovacuum would leave.
 */
async function vacuumScaleout (url, schema) {
  const { default: pg } = await import('pg')
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    const { rows } = await c.query('SELECT tablename FROM pg_tables WHERE schemaname = $1', [schema])
    for (const { tablename } of rows) await c.query(`VACUUM (ANALYZE) "${schema}"."${tablename}"`)
    const av = (await c.query("SELECT current_setting('autovacuum') AS v")).rows[0].v
    if (av !== 'on' && !vacuumScaleout.noted) {
      vacuumScaleout.noted = true
      log(`PostgreSQL runs with autovacuum ${av}: the harness vacuums the scale-out tables before each case`)
    }
  } finally {
    await c.end()
  }
}

async function pgUrl () {
  if (process.env.BENCH_PG_URL) return process.env.BENCH_PG_URL
  const { default: pg } = await import('pg')
  for (const user of ['postgres', 'root']) {
    const url = `postgres://${user}@127.0.0.1:5432/test`
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 })
    try { await c.connect(); await c.end(); return url } catch { await c.end().catch(() => {}) }
  }
  return 'postgres://postgres@127.0.0.1:5432/test'
}

let LOADER = { loader: 'builtin', fallback: true }

async function main () {
  const started = Date.now()
  LOADER = chooseLoader()
  if (LOADER.fallback) log(`LOADER: ${fallbackLabel(LOADER)} (${LOADER.why}); wrk measures the proxies, this one partly measures itself`)
  else log(`loader: ${LOADER.version || 'wrk'}, ${LOADER.threads} thread(s), bench/wrk/post.lua`)
  const runId = `${Date.now().toString(36)}_${process.pid}`
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-bench-'))
  const mockPort = await freePort()
  const mock = await start('mock upstream', 1, NODE, [join(here, 'mock-upstream.mjs')], { PORT: String(mockPort) }, mockPort)
  const upstream = `http://127.0.0.1:${mockPort}`
  const scaleout = { prefix: `gwbench:${runId}:`, schema: `gwbench_${runId}`, redis: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379', pg: undefined }

  const gatewayEnv = port => ({ PORT: String(port), BENCH_MOCK_PORT: String(mockPort), BENCH_DATA_DIR: dataDir })
  const startGateway = async (name, config, extraEnv = {}, nodeArgs = [], dist = join(root, 'dist')) => {
    const port = await freePort()
    const env = { ...gatewayEnv(port), GATEWAY_CONFIG: join(here, 'configs', config), NODE_ENV: 'production', ...extraEnv }
    return start(name, 0, NODE, [...GATEWAY_NODE_FLAGS, ...nodeArgs, join(dist, 'server.js')], env, port, '/healthz')
  }
  const gwHeaders = { authorization: `Bearer ${KEY}` }
  const scaleoutEnv = () => ({ BENCH_REDIS_URL: scaleout.redis, BENCH_KV_PREFIX: scaleout.prefix, BENCH_PG_URL: scaleout.pg, BENCH_PG_SCHEMA: scaleout.schema })
  const startBare = async (name, nodeArgs = []) => {
    const port = await freePort()
    return start(name, 0, NODE, [...GATEWAY_NODE_FLAGS, ...nodeArgs, join(here, 'bare-proxy.mjs')], { UPSTREAM: upstream, PORT: String(port) }, port)
  }
  const startNginx = async () => {
    const nginx = nginxBinary()
    if (!nginx) throw Object.assign(new Error(`nginx is not installed (${HOW_TO_INSTALL_NGINX})`), { skip: true })
    const port = await freePort()
    const dir = mkdtempSync(join(dataDir, 'nginx-'))
    writeFileSync(join(dir, 'nginx.conf'), nginxConf(dir, port, mockPort))
    return start('nginx', 0, nginx, ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')], {}, port)
  }
  const portkeyHeaders = { authorization: 'Bearer sk-dummy', 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${upstream}/v1` }
  const portkeyServer = join(here, 'node_modules/@portkey-ai/gateway/build/start-server.js')

  const systems = [
    { id: 'direct', label: 'direct to mock (no proxy)', headers: {}, run: async () => ({ port: mockPort, child: null }) },
    // The floor of any proxy: nginx from the Debian package, one process, keep-alive to the mock.
    { id: 'nginx', label: 'nginx pass-through (C, 1 worker)', headers: {}, noCross: 'a pass-through cannot translate protocols', run: startNginx },
    {
      id: 'bare', label: 'bare fastify+undici proxy', headers: {}, noCross: 'a pass-through cannot translate protocols',
      run: () => startBare('bare proxy'),
    },
    { id: 'embedded', label: 'gateway, embedded (full pipeline, memory KV, SQLite ledger)', gateway: true, headers: gwHeaders, run: () => startGateway('embedded gateway', 'embedded.yaml') },
    // Observability off vs on (access log + metrics + trace context), beside the default config above.
    { id: 'embedded-obs-off', label: 'gateway, embedded, observability off (no access log, metrics, trace context)', gateway: true, headers: gwHeaders, run: () => startGateway('embedded gateway, observability off', 'embedded-obs-off.yaml') },
    { id: 'embedded-obs-on', label: 'gateway, embedded, observability on (access log written, metrics, trace context)', gateway: true, headers: gwHeaders, run: () => startGateway('embedded gateway, observability on', 'embedded-obs-on.yaml') },
    // Opt-in (BENCH_SYSTEMS): the same gateway with a 16 MB young generation instead of npm start's 4 MB:
    // 4× fewer scavenges per call (each stalls every call in flight), for the p99 vs peak RSS trade.
    { id: 'embedded-young16', optIn: true, label: 'gateway, embedded, --max-semi-space-size=16', gateway: true, headers: gwHeaders, run: () => startGateway('embedded gateway, young generation 16 MB', 'embedded.yaml', {}, ['--max-semi-space-size=16']) },
    // Opt-in (BENCH_SYSTEMS, with BENCH_BASE_DIST=<dist/ of another build>): that build, embedded, in
    // the same run, for before/after figures against the same bare proxy.
    { id: 'embedded-base', optIn: true, label: `gateway, embedded, build at ${process.env.BENCH_BASE_DIST ?? '(BENCH_BASE_DIST unset)'}`, gateway: true, headers: gwHeaders, run: () => startGateway('embedded gateway (base build)', 'embedded.yaml', {}, [], process.env.BENCH_BASE_DIST ?? join(root, 'dist')) },
    {
      id: 'scaleout', label: 'gateway, scale-out (full pipeline, Redis KV, PostgreSQL ledger)', gateway: true, headers: gwHeaders,
      run: async () => {
        scaleout.pg ??= await pgUrl()
        await vacuumScaleout(scaleout.pg, scaleout.schema)
        return startGateway('scale-out gateway', 'scaleout.yaml', scaleoutEnv())
      },
    },
    // Opt-in (BENCH_SYSTEMS, with BENCH_BASE_DIST): that build, scale-out in lease mode, for before/after figures.
    {
      id: 'scaleout-base', optIn: true, label: `gateway, scale-out, build at ${process.env.BENCH_BASE_DIST ?? '(BENCH_BASE_DIST unset)'}`, gateway: true, headers: gwHeaders,
      run: async () => {
        scaleout.pg ??= await pgUrl()
        await vacuumScaleout(scaleout.pg, `${scaleout.schema}_base`)
        // Its own schema and keys: the two builds' ledger migrations may differ.
        return startGateway('scale-out gateway (base build)', 'scaleout.yaml', { ...scaleoutEnv(), BENCH_KV_PREFIX: `${scaleout.prefix}base:`, BENCH_PG_SCHEMA: `${scaleout.schema}_base` }, [],
          process.env.BENCH_BASE_DIST ?? join(root, 'dist'))
      },
    },
    {
      id: 'scaleout-exact', label: 'gateway, scale-out, exact mode (every call\'s counts and hold in Redis and PostgreSQL)', gateway: true, headers: gwHeaders,
      run: async () => {
        scaleout.pg ??= await pgUrl()
        await vacuumScaleout(scaleout.pg, scaleout.schema)
        return startGateway('scale-out gateway, exact mode', 'scaleout-exact.yaml', scaleoutEnv())
      },
    },
    {
      id: 'portkey', label: 'Portkey gateway 1.15.2 (OSS, node server)', headers: portkeyHeaders, noCross: 'Portkey answers 500 "messages is not supported by openai"', noMessages: 'Portkey answers 500 "messages is not supported by openai"',
      run: async () => {
        if (!existsSync(portkeyServer)) throw new Error('bench/node_modules/@portkey-ai/gateway is not installed (npm --prefix bench install)')
        const port = await freePort()
        return start('portkey', 0, NODE, [...GATEWAY_NODE_FLAGS, portkeyServer, `--port=${port}`, '--headless'], { NODE_ENV: 'production' }, port)
      },
    },
  ].filter(s => ONLY ? ONLY.includes(s.id) : !s.optIn)

  const results = {}
  for (const sys of systems) {
    log(`starting ${sys.id}`)
    let proc
    try { proc = await sys.run() } catch (err) {
      // A system that cannot run here (nginx not installed) is reported as skipped, not as a failure.
      results[sys.id] = err.skip ? { skipped: err.message } : { error: err.message.split('\n')[0] }
      log(`${sys.id} ${err.skip ? 'skipped' : 'failed'}: ${err.message}`)
      continue
    }
    results[sys.id] = { cases: {} }
    let rssMb = NaN
    // A gateway's process serves one case: its peak is also that case's (for the agent RSS target).
    const keepRss = (p, caseId) => {
      if (!p?.child) return
      const r = peakRssMb(p.child.pid)
      if (!(r <= rssMb)) rssMb = r
      const x = caseId && sys.gateway ? results[sys.id].cases[caseId] : undefined
      if (x && !x.na) x.rssMb = r
    }
    let prevCase
    // JIT warm-up of the whole system before its first case (each case also gets its own warm-up).
    const warmUp = async p => {
      if (WARMUP <= 0) return
      for (const c of CASES.filter(c => c.id === 'json-c16' || c.id === 'sse-c16' || (c.cross && sys.gateway))) {
        await load({ url: `http://127.0.0.1:${p.port}${c.path}`, body: c.body, headers: sys.headers, connections: c.connections, duration: WARMUP, idempotency: !!sys.gateway }).catch(() => {})
      }
    }
    await warmUp(proc)
    let first = true
    for (const c of CASES) {
      if (c.cross && !sys.gateway) { results[sys.id].cases[c.id] = { na: sys.noCross ?? 'no protocol translation' }; continue }
      if (c.messages && sys.noMessages) { results[sys.id].cases[c.id] = { na: sys.noMessages }; continue }
      // A gateway runs each case in a fresh process: every request carries a unique
      // Idempotency-Key, the claims stay held for their TTL (24 h), and the memory store refuses
      // new ones with 503 once stores.kv.maxClaims are held. One process for every case ran out
      // of claims after ~100,000 calls and later cases measured 503s. A fresh process per case
      // also keeps one case's heap (claims, caches) out of the next one's numbers.
      if (sys.gateway && !first) {
        keepRss(proc, prevCase)
        await stop(proc)
        try { proc = await sys.run() } catch (err) { results[sys.id].cases[c.id] = { invalid: `failed to restart: ${err.message.split('\n')[0]}` }; log(`${sys.id} ${c.id}: restart failed: ${err.message}`); proc = undefined; break }
        await warmUp(proc)
      }
      first = false
      prevCase = c.id
      const base = `http://127.0.0.1:${proc.port}`
      const url = base + c.path
      const check = await probe(url, c.body, sys.headers)
      if (check.status !== 200 || !c.expect.test(check.text)) {
        results[sys.id].cases[c.id] = { invalid: `probe answered ${check.status}: ${check.text.slice(0, 160).replace(/\s+/g, ' ')}` }
        log(`${sys.id} ${c.id}: probe failed (${check.status})`)
        continue
      }
      const spec = { url, body: c.body, headers: sys.headers, connections: c.connections, duration: WARMUP, idempotency: !!sys.gateway }
      if (WARMUP > 0) await load(spec)
      const runs = []
      const cpu0 = proc.child ? cpuMs(proc.child.pid) : NaN
      for (let i = 0; i < RUNS; i++) runs.push(await load({ ...spec, duration: DURATION }))
      // CPU the system under test spent per request, over all measured runs (not for direct: the mock is shared).
      const cpuUs = proc.child ? (cpuMs(proc.child.pid) - cpu0) * 1000 / runs.reduce((n, r) => n + r.requests, 0) : NaN
      const pick = runs.find(r => r.rps === median(runs.map(r => r.rps)))
      const errors = runs.reduce((n, r) => n + r.errors, 0)
      const non2xx = runs.reduce((n, r) => n + r.non2xx, 0)
      const statuses = {}
      for (const r of runs) for (const [k, v] of Object.entries(r.statuses ?? {})) statuses[k] = (statuses[k] ?? 0) + v
      results[sys.id].cases[c.id] = { ...pick, cpuUs, runs: runs.map(r => r.rps), errors, non2xx, statuses, invalid: errors + non2xx > 0 ? `${errors} errors, ${non2xx} non-2xx (${JSON.stringify(statuses)})` : undefined }
      log(`${sys.id} ${c.id}: ${pick.rps.toFixed(0)} req/s, p50 ${pick.p50.toFixed(3)} ms, p99 ${pick.p99.toFixed(3)} ms, errors ${errors}, non-2xx ${non2xx} [${pick.loader}]`)
    }
    keepRss(proc, prevCase)
    results[sys.id].rssMb = rssMb
    if (proc?.child) await stop(proc)
  }

  const profiles = []
  if (PROFILE) {
    // How to start each profiled system (with extra node flags) and what its requests carry.
    const profiled = {
      bare: () => ({ headers: {}, start: args => startBare('bare (profiled)', args) }),
      embedded: () => ({ headers: gwHeaders, start: args => startGateway('embedded (profiled)', 'embedded.yaml', {}, args) }),
      scaleout: () => scaleout.pg && results.scaleout && !results.scaleout.error
        ? { headers: gwHeaders, start: args => startGateway('scaleout (profiled)', 'scaleout.yaml', scaleoutEnv(), args) }
        : undefined,
    }
    for (const { sys, id } of PROFILE_CASES) {
      const c = CASES.find(x => x.id === id)
      const how = profiled[sys]?.()
      if (!c || !how || (ONLY && !ONLY.includes(sys))) { if (!c || !profiled[sys]) log(`unknown profile case ${sys}:${id}`); continue }
      const label = systems.find(x => x.id === sys)?.label ?? sys
      log(`profiling ${sys} (${c.label})`)
      try { profiles.push({ ...await profileSystem(how, dataDir, sys, c), label }) } catch (err) { profiles.push({ c, label, error: err.message }); log(`profile failed: ${err.message}`) }
    }
  }

  // Bytes allocated per call (bench/alloc.mjs: its own mock and gateway, counted by GC tracking, so
  // it does not depend on the machine being idle). Only when the embedded gateway is measured.
  let alloc
  let allocBare
  let hooksCost
  if (!ONLY || ONLY.includes('embedded')) {
    log('allocation per call (bench/alloc.mjs, gateway and bare proxy)')
    alloc = await runAlloc([]).catch(err => ({ error: err.message.split('\n')[0] }))
    allocBare = await runAlloc(['--bare']).catch(err => ({ error: err.message.split('\n')[0] }))
    if (process.env.BENCH_HOOKS !== '0') {
      log('response hooks cost (bench/hooks-cost.mjs)')
      hooksCost = await runHooksCost().catch(err => ({ error: err.message.split('\n')[0] }))
    }
  }

  const mockRss = peakRssMb(mock.child.pid)
  await stop(mock)
  if (results.scaleout && !results.scaleout.error) await cleanupScaleout(scaleout).catch(err => log(`scale-out cleanup: ${err.message}`))
  if (results['scaleout-base'] && !results['scaleout-base'].error) await cleanupScaleout({ ...scaleout, schema: `${scaleout.schema}_base` }).catch(err => log(`scale-out cleanup: ${err.message}`))
  rmSync(dataDir, { recursive: true, force: true })
  const loaders = new Set(Object.values(results).flatMap(r => Object.values(r.cases ?? {}).map(c => c.loader).filter(Boolean)))
  const check = validity(results)
  if (check.status === 'INVALID') log(`RUN INVALID: direct to the mock is not at least 2× the bare proxy: ${check.rows.map(r => `${r.label}: direct ${r.direct.toFixed(0)} vs bare ${r.bare.toFixed(0)} req/s (${r.ratio.toFixed(2)}×${r.ok ? '' : ', < 2×'})`).join('; ')}`)
  else if (check.status === 'valid') log(`run valid: direct ≥ 2× bare in every case (${check.rows.map(r => `${r.id} ${r.ratio.toFixed(2)}×`).join(', ')})`)
  else log(`validity not checked: ${check.why}`)
  const extra = {
    mockRss, profiles, alloc, allocBare, hooksCost, loaders: [...loaders], loader: LOADER, seconds: (Date.now() - started) / 1000,
    meta: { date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), DURATION, RUNS, WARMUP, PROFILE_SECONDS, hasTaskset, node: NODE_VERSION },
  }
  // Raw results, so the report can be re-rendered (node bench/run.mjs --render) after editing bench/analysis.md.
  const { mkdirSync } = await import('node:fs')
  mkdirSync(join(here, 'results'), { recursive: true })
  writeFileSync(join(here, 'results', 'last-run.json'), JSON.stringify({ systems: systems.map(s => ({ id: s.id, label: s.label })), results, extra }, null, 1))
  writeFileSync(OUT, report(systems, results, extra))
  log(`wrote ${OUT} in ${((Date.now() - started) / 1000).toFixed(0)} s`)
  failLoudly(results, extra)
}

/** Cells with transport errors, non-2xx answers or a failed probe: never silently part of a report. */
function invalidCells (results, extra = {}) {
  const out = []
  for (const [sys, r] of Object.entries(results)) {
    if (r.error) out.push({ sys, id: '(start)', why: r.error })
    for (const [id, x] of Object.entries(r.cases ?? {})) if (x.invalid) out.push({ sys, id, why: x.invalid })
  }
  // The response-hooks rows follow the same rule: a row with errors or non-2xx is not a measurement.
  for (const r of extra.hooksCost?.rows ?? []) if (r.bad > 0) out.push({ sys: 'hooks-cost', id: r.key, why: `${r.bad} errors or non-2xx` })
  if (extra.hooksCost?.error) out.push({ sys: 'hooks-cost', id: '(run)', why: extra.hooksCost.error })
  if (extra.alloc?.error) out.push({ sys: 'alloc', id: 'embedded', why: extra.alloc.error })
  if (extra.allocBare?.error) out.push({ sys: 'alloc', id: 'bare', why: extra.allocBare.error })
  return out
}

/** Any invalid cell makes the run exit 1 after the report is written, with each cell named. */
function failLoudly (results, extra) {
  const bad = invalidCells(results, extra)
  if (bad.length === 0) return
  log(`INVALID CELLS (${bad.length}): the report marks them INVALID and leaves them out of the targets`)
  for (const b of bad) log(`  INVALID ${b.sys} ${b.id}: ${b.why}`)
  process.exitCode = 1
}

/** A bench script's last stdout line, parsed as JSON. */
function runJson (c, a, what) {
  return new Promise((res, rej) => {
    const child = spawn(c, a, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    children.add(child)
    let out = ''
    let err = ''
    child.stdout.on('data', d => { out += d })
    child.stderr.on('data', d => { err = (err + d).slice(-2000) })
    child.on('exit', code => {
      children.delete(child)
      if (code !== 0) return rej(new Error(`${what} exited ${code}: ${err}`))
      try { res(JSON.parse(out.trim().split('\n').at(-1))) } catch { rej(new Error(`${what} output: ${out.slice(-500)} ${err}`)) }
    })
  })
}

/** bench/hooks-cost.mjs (it pins its own processes like this harness); resolves its JSON line. */
function runHooksCost () {
  const seconds = String(Number(process.env.BENCH_HOOKS_SECONDS ?? DURATION))
  const rounds = String(Number(process.env.BENCH_HOOKS_ROUNDS ?? RUNS))
  // BENCH_HOOKS_BASELINE: the dist/ of a build from before response hooks existed, measured beside this one.
  const base = process.env.BENCH_HOOKS_BASELINE
  const dist = join(here, '..', 'dist')
  const variants = base ? [`before-hooks=${base}:none`, `no-hooks=${dist}:none`, `noop-hooks=${dist}:noop-hooks`] : []
  return runJson(NODE, [join(here, 'hooks-cost.mjs'), seconds, rounds, ...variants, '--json'], 'hooks-cost.mjs')
}

/** The kinds of call the allocation section counts (bench/alloc.mjs --kinds): short and agent-sized chat, JSON and streamed. */
const ALLOC_KINDS = 'json,stream,agent-json,agent-stream'
/** The allocation section's rows: alloc.mjs kind → label. */
const ALLOC_LABELS = [['json', 'JSON chat'], ['stream', 'streamed chat'], ['agent-json', 'agent chat (145 KB), JSON'], ['agent-stream', 'agent chat (145 KB), streamed']]
/** bench/alloc.mjs on core 0 (the gateway inherits the pinning); resolves its JSON line. BENCH_ALLOC_CALLS (default 3000). */
function runAlloc (extra) {
  const [c, a] = pin(0, NODE, [join(here, 'alloc.mjs'), String(Number(process.env.BENCH_ALLOC_CALLS ?? 3000)), '8', '--json', '--survivors', `--kinds=${ALLOC_KINDS}`, ...extra])
  return runJson(c, a, 'alloc.mjs')
}

/** Starts a system with --cpu-prof, loads it with one case, stops it with SIGTERM. */
async function profileSystem (how, dataDir, sys, c) {
  const profDir = join(dataDir, `cpu-prof-${sys}-${c.id}`)
  const proc = await how.start(['--cpu-prof', `--cpu-prof-dir=${profDir}`])
  const spec = { url: `http://127.0.0.1:${proc.port}${c.path}`, body: c.body, headers: how.headers, connections: c.connections, duration: PROFILE_SECONDS, idempotency: true }
  const warm = Math.max(WARMUP, 2)
  await load({ ...spec, duration: warm })
  // Samples from start-up and warm-up are left out of the summary (module loading, JIT).
  const skipMs = proc.startupMs + warm * 1000 + 300
  const r = await load(spec)
  await stop(proc, 'SIGTERM') // the gateway exits on SIGTERM; node writes the profile on exit
  const { readdirSync } = await import('node:fs')
  const file = readdirSync(profDir).find(f => f.endsWith('.cpuprofile'))
  if (!file) throw new Error('no .cpuprofile written')
  const keep = join(here, 'profiles', `${sys}-${c.id}.cpuprofile`)
  const { mkdirSync, copyFileSync } = await import('node:fs')
  mkdirSync(dirname(keep), { recursive: true })
  copyFileSync(join(profDir, file), keep)
  const all = summarize(JSON.parse(readFileSync(keep, 'utf8')), { root, top: 400, skipMs })
  // Per-request figures (for the gateway − bare comparison): every function's self time ÷ requests served.
  const reqs = r.requests || r.rps * PROFILE_SECONDS
  const fns = all.top.map(x => ({ name: x.name, where: x.where, area: x.area, us: x.selfMs * 1000 / reqs }))
  return { ...all, top: all.top.slice(0, 25), fns, busyUsPerReq: all.busyMs * 1000 / reqs, sys, c, skipMs, file: relative(root, keep), rps: r.rps }
}

async function cleanupScaleout (s) {
  const { default: pg } = await import('pg')
  const c = new pg.Client({ connectionString: s.pg })
  await c.connect()
  await c.query(`DROP SCHEMA IF EXISTS "${s.schema}" CASCADE`)
  await c.end()
  const { Redis } = await import('ioredis')
  const r = new Redis(s.redis, { lazyConnect: true, maxRetriesPerRequest: 1 })
  await r.connect()
  let cursor = '0'
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `${s.prefix}*`, 'COUNT', 1000)
    if (keys.length) await r.del(...keys)
    cursor = next
  } while (cursor !== '0')
  r.disconnect()
}

// ---------------------------------------------------------------------------------------------
// Report

/** Direct-to-mock must be at least 2× the bare proxy in every case both measured (same concurrency). */
function validity (results) {
  const ok = (sys, id) => { const r = results[sys]?.cases?.[id]; return r && !r.invalid && !r.na && Number.isFinite(r.rps) ? r : undefined }
  const rows = []
  for (const c of CASES.filter(c => !c.cross)) {
    const d = ok('direct', c.id)
    const b = ok('bare', c.id)
    if (d && b) rows.push({ id: c.id, label: c.label, direct: d.rps, bare: b.rps, ratio: d.rps / b.rps, ok: d.rps >= 2 * b.rps })
  }
  if (rows.length === 0) return { status: 'not checked', rows, why: 'it needs both direct and bare measured (BENCH_SYSTEMS) without errors' }
  return { status: rows.every(r => r.ok) ? 'valid' : 'INVALID', rows }
}

function report (systems, results, extra) {
  const { date, DURATION, RUNS, WARMUP, PROFILE_SECONDS, hasTaskset } = extra.meta
  const f = (x, d = 0) => Number.isFinite(x) ? x.toFixed(d) : 'n/a'
  const get = (sys, id) => { const x = results[sys]?.cases?.[id]; return x && !x.invalid && !x.na ? x : undefined }
  const lines = []
  const cpu = cpus()[0]?.model ?? 'unknown CPU'
  const info = extra.loader ?? { loader: extra.loaders.join(' + ') || 'n/a', fallback: !extra.loaders.includes('wrk') }
  const loader = info.fallback
    ? `**${fallbackLabel(info)}** (${extra.loaders.join(' + ') || info.loader}${info.why ? `; ${info.why}` : ''}): on the shared core it may cap direct calls to the mock, and so the bare proxy, and inflate every ratio`
    : `wrk (${info.version || 'native'}, ${info.threads ?? 1} thread(s), \`bench/wrk/post.lua\`: POST body and headers, a unique \`Idempotency-Key\` per request for the gateways)`
  const check = validity(results)
  const fmtRow = r => `${r.label}: direct ${f(r.direct)} req/s, bare ${f(r.bare)} req/s, ${f(r.ratio, 2)}×${r.ok ? '' : ' (< 2×)'}`
  lines.push('# Benchmarks', '',
    '<!-- Written by `npm run bench` (bench/run.mjs). Do not edit by hand: edit bench/analysis.md, which is copied in below. -->', '',
    `Run on ${date} (took ${f(extra.seconds)} s).`, '',
    ...(check.status === 'INVALID'
      ? [`**INVALID RUN: direct calls to the mock are not at least 2× the bare proxy at the same concurrency, so the load generator and the mock (which share core 1) limit the numbers below, not only the system under test; every ratio may be inflated.** ${check.rows.map(fmtRow).join('; ')}.`, '']
      : check.status === 'valid'
        ? [`Validity check passed: direct calls to the mock are at least 2× the bare proxy in every case measured on both (${check.rows.map(fmtRow).join('; ')}).`, '']
        : [`Validity check not run: ${check.why}.`, '']),
    ...(invalidCells(results, extra).length
      ? [`**INVALID CELLS: ${invalidCells(results, extra).map(b => `${b.sys} ${b.id} (${b.why.replace(/\|/g, '/')})`).join('; ')}. They are marked INVALID below and not used for targets.**`, '']
      : []),
    `- Machine: ${cpu}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Linux ${readOs()}, Node ${extra.meta.node ?? process.version}.`,
    `- Pinning: ${hasTaskset ? 'system under test on core 0 (`taskset -c 0`); load generator and mock upstream on core 1.' : 'none (taskset unavailable or one core): numbers are not comparable with pinned runs.'}`,
    `- Load: ${loader}, closed loop (each connection sends its next request when the previous response has been read to its end), keep-alive, loopback.`,
    `- Each cell: the median (by req/s) of ${RUNS} run(s) of ${DURATION} s after a ${WARMUP} s warm-up. Latency in ms, ${info.loader === 'wrk' ? 'from wrk\'s latency histogram (every response) of that run' : 'computed from every 2xx response time of that run'}.`,
    '- Validity: the load generator and the mock share core 1; a run is valid only when calling the mock directly is at least 2× as fast as through the bare proxy at the same concurrency, in every case measured on both (so core 1 had room to spare when the proxies were measured).',
    '- Mock upstream: a raw TCP server with a minimal HTTP/1.1 reader (keep-alive, Content-Length or chunked bodies), JSON answer (~450 B) or ~22 SSE events, each its own HTTP chunk, with usage; it answers immediately, so the numbers measure proxy overhead only. It parses bodies up to 8 KB and searches larger ones for `"stream": true`, so its cost stays flat with the body size.',
    '- Agent cases: `bench/agent-body.mjs`, a coding-agent request of about 145 KB as Claude Code and Codex send on every turn (a 15 KB system prompt, 24 tools with rich JSON schemas, 15 turns of tool calls answered with ~5 KB file contents), on chat completions (`bench/chat`) and messages (`bench/messages`), both same-protocol deployments; generated deterministically, the same bytes on every run.',
    '- nginx: the Debian package, one process (`master_process off`), pinned to core 0 like every system under test, keep-alive both sides, request bodies buffered in memory, responses unbuffered: the floor of any proxy.',
    '- Gateway configs: `bench/configs/embedded.yaml` and `bench/configs/scaleout.yaml` — pipeline ip-limit (limit 1e9), size-limit, timeout, auth (config key bound to organization `bench`), media-validation, idempotency (a unique `Idempotency-Key` on every request), quota (1e9 requests/minute), balance (huge initial balance; every call reserves, then charges and writes a usage record).',
    `- Every Node-based system (the bare proxy, the gateways, Portkey) runs on the project's Node (${extra.meta.node ?? process.version}, node_modules/node) with the node flags of \`npm start\`: \`${GATEWAY_NODE_FLAGS.join(' ') || '(none)'}\` (see README, Deployment: a smaller young generation, same throughput, far less RSS).`,
    '- "+p50 vs direct": median latency added over calling the mock directly. "× bare": throughput relative to the bare fastify+undici proxy (for the cross-protocol case, relative to the bare proxy\'s streaming chat at c=16, the nearest thing a pass-through can do).',
    '- "CPU µs/req": user+system CPU time of the system-under-test process (from /proc/<pid>/stat, 10 ms ticks) over all measured runs of the case, divided by the requests served; the inverse is roughly the req/s one core could sustain for that process alone. Not given for direct (the mock is shared).',
    `- A cell marked INVALID had transport errors or non-2xx answers during the measured runs and is not used for targets${info.loader === 'wrk' && !info.countStatus ? ' (with wrk, non-2xx is its count of status > 399; BENCH_WRK_STATUS=1 counts every status)' : ''}.`, '')

  lines.push('## Results', '')
  for (const c of CASES) {
    lines.push(`### ${c.label}`, '', '| system | req/s | p50 | p99 | +p50 vs direct | × bare | runs (req/s) | CPU µs/req | errors / non-2xx |', '|---|--:|--:|--:|--:|--:|---|--:|--:|')
    const direct = get('direct', c.cross ? 'sse-c16' : c.id)
    const bare = get('bare', c.cross ? 'sse-c16' : c.id)
    for (const s of systems) {
      const r = results[s.id]
      if (r?.error) { lines.push(`| ${s.label} | failed to start: ${r.error.replace(/\|/g, '/')} | | | | | | | |`); continue }
      if (r?.skipped) { lines.push(`| ${s.label} | not run: ${r.skipped.replace(/\|/g, '/')} | | | | | | | |`); continue }
      const x = r?.cases?.[c.id]
      if (!x) { lines.push(`| ${s.label} | n/a | | | | | | | |`); continue }
      if (x.na) { lines.push(`| ${s.label} | n/a (${x.na}) | | | | | | | |`); continue }
      if (!Number.isFinite(x.rps)) { lines.push(`| ${s.label} | INVALID: ${x.invalid.replace(/\|/g, '/')} | | | | | | | |`); continue }
      const mark = x.invalid ? ' INVALID' : ''
      lines.push(`| ${s.label} | ${f(x.rps)}${mark} | ${f(x.p50, 3)} | ${f(x.p99, 3)} | ${direct ? f(x.p50 - direct.p50, 3) : 'n/a'} | ${bare ? f(x.rps / bare.rps, 2) : 'n/a'} | ${x.runs.map(v => f(v)).join(', ')} | ${f(x.cpuUs)} | ${x.errors} / ${x.non2xx} |`)
    }
    lines.push('')
  }
  lines.push('### Peak RSS (VmHWM of each process over its whole run; a gateway runs each case in a fresh process, and the highest of those is given)', '', '| process | peak RSS (MB) |', '|---|--:|')
  for (const s of systems) if (s.id !== 'direct') lines.push(`| ${s.label} | ${results[s.id]?.error ? 'failed to start' : results[s.id]?.skipped ? 'not run' : f(results[s.id]?.rssMb, 1)} |`)
  lines.push(`| mock upstream (shared by all) | ${f(extra.mockRss, 1)} |`, '')

  if (extra.alloc) {
    lines.push('## Allocation per call (embedded gateway and bare proxy)', '')
    if (extra.alloc.error) lines.push(`bench/alloc.mjs failed: ${extra.alloc.error}`, '')
    else {
      const a = extra.alloc
      const b = extra.allocBare && !extra.allocBare.error ? extra.allocBare : undefined
      lines.push(`\`node bench/alloc.mjs ${a.calls} ${a.connections} --survivors [--bare]\` (\`npm run bench:alloc\`): ${a.calls} calls of each kind on ${a.connections} connections through a listening embedded gateway (bench/configs/embedded.yaml) and through the bare proxy, each with the node flags \`${(a.nodeFlags ?? []).join(' ') || '(none)'}\`, against the mock, after a warm-up. Bytes = the V8 heap allocated in the process between two forced full GCs, summed over every GC in between (v8.GCProfiler: used heap before each GC minus after the previous one); memory outside the V8 heap (Buffer contents, native) is not counted. "Survived" and "promoted" are the bytes the scavenges copied and moved to the old generation (\`--trace-gc-nvp\`), per call: what a scavenge's pause is proportional to. Byte counts do not depend on the machine being idle; CPU µs and pauses do.`, '')
      lines.push('| process | call | KB allocated / call | survived scavenges B / call | promoted B / call | scavenges / 1000 calls | mark-sweeps | GC pause µs / call | longest GC pause µs | CPU µs / call |', '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|')
      for (const [who, x] of [['gateway', a], ['bare proxy', b]]) {
        if (!x) continue
        for (const [id, label] of ALLOC_LABELS) {
          const r = x.results?.[id]
          if (r) lines.push(`| ${who} | ${label} | ${f(r.bytesPerCall / 1024, 1)} | ${f(r.survivedBytesPerCall)} | ${f(r.promotedBytesPerCall)} | ${f(r.scavengesPer1000, 1)} | ${r.markSweeps} | ${f(r.gcPauseUsPerCall, 1)} | ${f(r.maxGcPauseUs)} | ${f(r.cpuUsPerCall)} |`)
        }
      }
      if (b) {
        for (const [id, label] of ALLOC_LABELS) {
          const g = a.results?.[id]
          const x = b.results?.[id]
          if (g && x) lines.push('', `${label}: the gateway allocates ${f((g.bytesPerCall - x.bytesPerCall) / 1024, 1)} KB per call more than the bare proxy (${f(g.bytesPerCall / 1024, 1)} vs ${f(x.bytesPerCall / 1024, 1)} KB).`)
        }
      } else if (extra.allocBare?.error) lines.push('', `bench/alloc.mjs --bare failed: ${extra.allocBare.error}`)
      lines.push('')
    }
  }

  if (extra.hooksCost) {
    lines.push('## Response hooks cost', '')
    if (extra.hooksCost.error) lines.push(`bench/hooks-cost.mjs failed: ${extra.hooksCost.error}`, '')
    else {
      const h = extra.hooksCost
      lines.push(`\`node bench/hooks-cost.mjs ${h.seconds} ${h.rounds}\`: one gateway process with only \`auth\` in front of the mock (${h.pinned ? 'gateway on core 0, mock and load on core 1' : 'not pinned'}, load generator ${h.loader}), JSON and streamed chat at c=16 (same protocol: the fast paths), without any plugin with response hooks and with one whose \`onResponse\`/\`onStreamEvent\` do nothing; variants alternate round by round. CPU µs per request of the gateway process from /proc (10 ms ticks). Medians of ${h.rounds} round(s), every run in brackets.`, '')
      lines.push('| variant | call | req/s | runs (req/s) | CPU µs / req | runs (CPU µs / req) | errors + non-2xx |', '|---|---|--:|---|--:|---|--:|')
      for (const r of h.rows) {
        const [variant, kind] = r.key.split(' ')
        lines.push(`| ${variant} | ${kind === 'stream' ? 'streamed chat' : 'JSON chat'} | ${f(r.medianRps)}${r.bad ? ' INVALID' : ''} | ${r.rps.map(v => f(v)).join(', ')} | ${f(r.medianCpuUs)} | ${r.cpuUs.map(v => f(v)).join(', ')} | ${r.bad} |`)
      }
      lines.push('')
    }
  }

  lines.push('## Targets', '', '| target | measured | status |', '|---|---|---|')
  for (const t of targets(results)) lines.push(`| ${t.name} | ${t.measured} | ${t.status} |`)
  lines.push('')

  // Gateway − bare, per request, for each case profiled on both.
  const profs = (extra.profiles ?? []).filter(p => !p.error && p.fns)
  for (const g of profs.filter(p => p.sys !== 'bare')) {
    const b = profs.find(p => p.sys === 'bare' && p.c.id === g.c.id)
    if (!b) continue
    const sum = (p, key) => { const m = new Map(); for (const x of p.fns) m.set(key(x), (m.get(key(x)) ?? 0) + x.us); return m }
    lines.push(`## Where the extra CPU goes: ${g.label}, minus the bare proxy, ${g.c.label}`, '')
    lines.push(`CPU time per request served while profiled (self time ÷ requests). The profiler adds overhead of its own, more where more JavaScript runs, so these absolute figures are higher than the CPU µs/req column of the tables above (measured without it); read them for where the difference lies, not for its exact size: bare ${f(b.busyUsPerReq, 1)} µs, gateway ${f(g.busyUsPerReq, 1)} µs, difference ${f(g.busyUsPerReq - b.busyUsPerReq, 1)} µs. From \`${b.file}\` and \`${g.file}\`.`, '')
    const ab = sum(b, x => x.area), ag = sum(g, x => x.area)
    lines.push('| area | bare µs/req | gateway µs/req | difference |', '|---|--:|--:|--:|')
    for (const a of [...new Set([...ab.keys(), ...ag.keys()])].sort((x, y) => ((ag.get(y) ?? 0) - (ab.get(y) ?? 0)) - ((ag.get(x) ?? 0) - (ab.get(x) ?? 0)))) {
      const x = ab.get(a) ?? 0, y = ag.get(a) ?? 0
      if (x + y >= 1) lines.push(`| ${a} | ${f(x, 1)} | ${f(y, 1)} | ${f(y - x, 1)} |`)
    }
    lines.push('')
    const key = x => `${x.name}\u0000${x.where}`
    const fb = sum(b, key), fg = sum(g, key)
    const rows = [...new Set([...fb.keys(), ...fg.keys()])].map(k => [k, fb.get(k) ?? 0, fg.get(k) ?? 0]).sort((x, y) => (y[2] - y[1]) - (x[2] - x[1])).slice(0, 25)
    lines.push('| function (where) | bare µs/req | gateway µs/req | difference |', '|---|--:|--:|--:|')
    for (const [k, x, y] of rows) lines.push(`| \`${k.split('\u0000')[0]}\` ${k.split('\u0000')[1]} | ${f(x, 2)} | ${f(y, 2)} | ${f(y - x, 2)} |`)
    lines.push('')
  }

  for (const p of extra.profiles ?? []) {
    lines.push(`## CPU profile: ${p.label ?? 'gateway, embedded'}, ${p.c.label}`, '')
    if (p.error) { lines.push(`Profile failed: ${p.error}`, ''); continue }
    lines.push(`\`node --cpu-prof\` on the gateway process (core 0) under ${PROFILE_SECONDS} s of load (${f(p.rps)} req/s while profiled; the profiler costs some throughput). Start-up and warm-up samples (first ${f(p.skipMs / 1000, 1)} s) are left out. Summarised by \`node bench/cpuprofile-summary.mjs ${p.file} 40 ${f(p.skipMs)}\` (self time per function). The profile file is kept at \`${p.file}\` (not committed).`, '')
    lines.push(`Busy ${f(p.busyMs)} ms of ${f(p.totalMs)} ms sampled (${f(100 * p.busyMs / p.totalMs, 1)} % of the core). Self time by area: ${p.byArea.map(a => `${a.area} ${f(a.pct, 1)} %`).join(', ')}.`, '')
    lines.push('| # | function | where | self ms | % of busy |', '|--:|---|---|--:|--:|')
    p.top.forEach((x, i) => { lines.push(`| ${i + 1} | \`${x.name}\` | ${x.where} | ${f(x.selfMs, 1)} | ${f(x.pct, 1)} |`) })
    lines.push('')
  }

  const analysis = join(here, 'analysis.md')
  if (existsSync(analysis)) lines.push(readFileSync(analysis, 'utf8').trim(), '')

  lines.push('## Commands', '', '```sh',
    'npm run bench                                   # build, install bench deps, all systems, 3 × 5 s per case, + profile (~7 min); installs wrk when root',
    'BENCH_LOADER=autocannon npm run bench           # the fallback load generator (ratios may be inflated)',
    'BENCH_DURATION=2 BENCH_RUNS=1 npm run bench     # quicker',
    'npm run bench:alloc                             # bytes allocated, GCs and CPU per call of the embedded gateway only (node bench/alloc.mjs [calls] [connections] [--profile] [--no-idempotency])',
    'BENCH_HOOKS_BASELINE=/tmp/before-hooks/dist npm run bench   # the response hooks section with a build from before hooks (see its section above)',
    'BENCH_SYSTEMS=direct,bare,embedded BENCH_OUT=/tmp/b.md npm run bench   # a subset (keep direct and bare: the validity check needs both)',
    'BENCH_SYSTEMS=direct,bare,embedded,embedded-obs-off,embedded-obs-on npm run bench   # observability off vs default vs on only',
    'node bench/hooks-cost.mjs 5 3                   # the response-hooks section alone',
    'node bench/tails.mjs 10 16 json [--bare]        # event-loop delay, GC pauses and SQLite batch commits under wrk (pinned)',
    'bench/obs-cost.sh                               # instructions per call, observability off / default / on (cachegrind, slow)',
    'node bench/cpuprofile-summary.mjs bench/profiles/embedded-json-c16.cpuprofile 40 <skipMs>   # re-read the profile',
    'node bench/run.mjs --render                     # rewrite BENCHMARKS.md from bench/results/last-run.json (after editing bench/analysis.md)',
    'npm test -- test/bench/                         # smoke test of the harness and the validity rule (no timing assertions)',
    '```', '',
    'Run it through npm (`npm run bench`, `npm test`): npm scripts use the project\'s Node 24, and every process of the run uses the node that runs bench/run.mjs; the system `node` may be older.',
    'wrk: `npm run bench` installs it (`apt-get install -y wrk`) when it is missing and the run is root (BENCH_INSTALL_WRK=0 to never install); otherwise install it yourself (`sudo apt-get install wrk`, `brew install wrk`). Without it the harness falls back to autocannon and labels the report so.',
    'Scale-out needs Redis on 127.0.0.1:6379 and PostgreSQL on 127.0.0.1:5432 (database `test`, trust auth, user postgres or root; override with BENCH_REDIS_URL / BENCH_PG_URL). Each run uses a fresh Redis key prefix and PostgreSQL schema and removes them afterwards; the schema\'s tables are vacuumed before each case (every call leaves dead hold rows, which a PostgreSQL with autovacuum off, as on CI machines, never clears).',
    'Portkey runs from bench/node_modules with `@hono/node-server` overridden to 1.13.5 (the version Portkey\'s own lockfile resolves): with 1.14.x its streaming path throws `TypeError: immutable` (Portkey-AI/gateway#1389) and every streamed call answers 500.', '')
  return lines.join('\n')
}

function readOs () {
  try { return readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim() } catch { return 'unknown' }
}

function targets (results) {
  const x = (sys, id) => { const r = results[sys]?.cases?.[id]; return r && !r.invalid && !r.na && Number.isFinite(r.rps) ? r : undefined }
  const out = []
  const ratio = (name, sys, id, bareId, min) => {
    const a = x(sys, id)
    const b = x('bare', bareId)
    if (!a || !b) return out.push({ name, measured: 'n/a', status: results[sys] ? 'not measured (invalid or missing cell)' : 'not run' })
    const v = a.rps / b.rps
    out.push({ name, measured: `${v.toFixed(2)}× (${a.rps.toFixed(0)} vs ${b.rps.toFixed(0)} req/s)`, status: v >= min ? 'met' : `missed by ${(min - v).toFixed(2)}×` })
  }
  for (const id of ['json-c1', 'json-c16', 'json-c64']) ratio(`embedded ≥ 0.85× bare, JSON ${id.slice(5)}`, 'embedded', id, id, 0.85)
  ratio('embedded ≥ 0.85× bare, streaming c=16', 'embedded', 'sse-c16', 'sse-c16', 0.85)
  ratio('embedded cross-protocol streaming ≥ 0.75× bare streaming, c=16', 'embedded', 'xsse-c16', 'sse-c16', 0.75)
  {
    const g = x('embedded', 'json-c1'); const b = x('bare', 'json-c1'); const d = x('direct', 'json-c1')
    const name = 'embedded added p50 at c=1 within 0.15 ms of bare\'s'
    if (!g || !b || !d) out.push({ name, measured: 'n/a', status: 'not measured' })
    else {
      const diff = g.p50 - b.p50
      out.push({ name, measured: `+${(g.p50 - d.p50).toFixed(3)} ms vs bare +${(b.p50 - d.p50).toFixed(3)} ms (difference ${diff.toFixed(3)} ms)`, status: diff <= 0.15 ? 'met' : `missed by ${(diff - 0.15).toFixed(3)} ms` })
    }
  }
  // Tails: the gateway's p99 at most twice the bare proxy's, in each case both ran.
  for (const id of ['json-c1', 'json-c16', 'json-c64', 'sse-c16']) {
    const g = x('embedded', id); const b = x('bare', id)
    const name = `embedded p99 ≤ 2× bare's, ${id.startsWith('sse') ? 'streaming c=16' : `JSON ${id.slice(5)}`}`
    if (!g || !b) { out.push({ name, measured: 'n/a', status: 'not measured' }); continue }
    const v = g.p99 / b.p99
    out.push({ name, measured: `${g.p99.toFixed(3)} vs ${b.p99.toFixed(3)} ms (${v.toFixed(2)}×)`, status: v <= 2 ? 'met' : `missed by ${(v - 2).toFixed(2)}×` })
  }
  // Agent-sized requests (issue 32): throughput, added latency and memory against the bare proxy.
  for (const id of ['agent-json-c8', 'agent-sse-c8', 'agent-msg-json-c8', 'agent-msg-sse-c8']) ratio(`embedded ≥ 0.9× bare, ${id}`, 'embedded', id, id, 0.9)
  for (const id of ['agent-json-c1', 'agent-msg-json-c1']) {
    const g = x('embedded', id); const b = x('bare', id); const d = x('direct', id)
    const name = `embedded added p50 within 0.5 ms of bare's, ${id}`
    if (!g || !b || !d) { out.push({ name, measured: 'n/a', status: 'not measured' }); continue }
    const diff = g.p50 - b.p50
    out.push({ name, measured: `+${(g.p50 - d.p50).toFixed(3)} ms vs bare +${(b.p50 - d.p50).toFixed(3)} ms (difference ${diff.toFixed(3)} ms)`, status: diff <= 0.5 ? 'met' : `missed by ${(diff - 0.5).toFixed(3)} ms` })
  }
  {
    const agentRss = Math.max(...Object.entries(results.embedded?.cases ?? {}).filter(([id, c]) => id.startsWith('agent-') && Number.isFinite(c.rssMb)).map(([, c]) => c.rssMb))
    const bareRss = results.bare?.rssMb
    const name = 'embedded peak RSS under agent load ≤ 1.2× bare\'s'
    if (!Number.isFinite(agentRss) || !Number.isFinite(bareRss)) out.push({ name, measured: 'n/a', status: 'not measured' })
    else {
      const v = agentRss / bareRss
      out.push({ name, measured: `${agentRss.toFixed(1)} vs ${bareRss.toFixed(1)} MB (${v.toFixed(2)}×)`, status: v <= 1.2 ? 'met' : `missed by ${(v - 1.2).toFixed(2)}×` })
    }
  }
  for (const sys of ['embedded', 'scaleout']) {
    const r = results[sys]
    const name = `${sys} peak RSS ≤ 150 MB`
    if (!r || r.error || !Number.isFinite(r.rssMb)) { out.push({ name, measured: 'n/a', status: 'not run' }); continue }
    out.push({ name, measured: `${r.rssMb.toFixed(1)} MB`, status: r.rssMb <= 150 ? 'met' : `missed by ${(r.rssMb - 150).toFixed(1)} MB` })
  }
  for (const id of ['json-c1', 'json-c16', 'json-c64', 'sse-c16']) ratio(`scale-out ≥ 0.7× bare, ${id.startsWith('sse') ? 'streaming c=16' : `JSON ${id.slice(5)}`}`, 'scaleout', id, id, 0.7)
  ratio('scale-out cross-protocol streaming ≥ 0.7× bare streaming, c=16', 'scaleout', 'xsse-c16', 'sse-c16', 0.7)
  // Exact mode (issue 32): one round trip per backend per call, so a call's added latency stays
  // within 1 ms of the bare proxy's, and half its throughput at c=16.
  {
    const g = x('scaleout-exact', 'json-c1'); const b = x('bare', 'json-c1'); const d = x('direct', 'json-c1')
    const name = 'scale-out exact, JSON c=1 added p50 within 1 ms of bare\'s'
    if (!g || !b || !d) out.push({ name, measured: 'n/a', status: results['scaleout-exact'] ? 'not measured' : 'not run' })
    else {
      const diff = g.p50 - b.p50
      out.push({ name, measured: `+${(g.p50 - d.p50).toFixed(3)} ms vs bare +${(b.p50 - d.p50).toFixed(3)} ms (difference ${diff.toFixed(3)} ms)`, status: diff <= 1 ? 'met' : `missed by ${(diff - 1).toFixed(3)} ms` })
    }
  }
  ratio('scale-out exact ≥ 0.5× bare, JSON c16', 'scaleout-exact', 'json-c16', 'json-c16', 0.5)
  return out
}

const killAll = () => { for (const c of children) { try { c.kill('SIGKILL') } catch {} } }
process.on('exit', killAll)
process.on('SIGINT', () => { killAll(); process.exit(130) })
process.on('SIGTERM', () => { killAll(); process.exit(143) })
// `--render [results.json]`: default bench/results/last-run.json.
const render = () => {
  const file = resolve(process.argv[process.argv.indexOf('--render') + 1] ?? join(here, 'results', 'last-run.json'))
  const { systems, results, extra } = JSON.parse(readFileSync(file, 'utf8'))
  writeFileSync(OUT, report(systems, results, extra))
  log(`re-rendered ${OUT} from ${relative(process.cwd(), file)}`)
  const check = validity(results)
  if (check.status === 'INVALID') log('RUN INVALID: direct to the mock is not at least 2× the bare proxy (see the top of the report)')
  failLoudly(results, extra)
}
;(process.argv.includes('--render') ? Promise.resolve().then(render) : main()).catch(err => { process.stderr.write(String(err?.stack ?? err) + '\n'); process.exit(1) })
