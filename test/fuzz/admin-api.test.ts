// Seeded fuzzing of the admin HTTP API over real sockets, on a SQLite file ledger and on a fresh
// PostgreSQL schema. Each case is one request a stranger or a buggy operator script could send:
// a route (mostly a real one, some with a wrong method or path), ids that exist or do not (unicode,
// very long, percent-encoded, path-traversal-like, NUL), odd query strings (negative, huge,
// fractional limits; invalid dates and ranges; unknown groupBy; repeated and empty params) and
// JSON bodies made valid then mutated (wrong types, 1e400, amounts with many decimals, missing and
// extra fields, deep nesting, invalid JSON, wrong content types), with the admin key, without one,
// with a wrong, a revoked or a client key. After every case: no 5xx; an error is the admin error
// body `{error: {code: <status>, message, metadata?}}` with x-gw-trace-id; a 2xx body has its
// route's shape; nothing but the admin key passes the guard (401, 403, and 429 only after ten
// wrong keys from one address); a refused request or a read changes nothing in the ledger, and a
// money write changes exactly its organization by its amount. After all cases the ledger's verify
// holds and each balance is Σ journal − Σ charges, recomputed here.
// FUZZ_SEED replays a run (the seed is printed); FUZZ_CASES sets the cases per ledger (default 300).
import t, { type Test } from 'tap'
import { connect } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteLedger } from '../../core/ledger/sqlite.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { formatMicros, parseAmount } from '../../money/billing.ts'
import { USAGE_CSV_HEADER } from '../../admin/views.ts'
import { AUTH_FAILURES_ALLOWED } from '../../admin/guard.ts'
import { ADMIN_KEY, REVOKED_ADMIN_KEY, running } from '../helpers/admin.ts'
import { TEST_KEY } from '../helpers/build-test-app.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import { parseResponse } from '../helpers/raw-http.ts'
import { mulberry32 as prng } from '../helpers/rng.ts'
import { DELETE, get, list, pathsOf, setPath } from '../helpers/fuzz.ts'
import { until } from '../helpers/until.ts'

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
const CASES = Number(process.env.FUZZ_CASES ?? 300)

// ── Raw HTTP from a chosen source address: the guard counts wrong keys per address. ──

interface Res { status: number, headers: Record<string, string>, body: string }

/** One request on its own connection from `localAddress`; status 0 when no answer came. */
function send (port: number, localAddress: string, head: Buffer, body?: Buffer, headOnly = false): Promise<Res> {
  return new Promise(resolve => {
    const sock = connect({ port, host: '127.0.0.1', localAddress })
    let raw = ''
    let done = false
    const finish = (): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      sock.destroy()
      // A HEAD answer announces a length it does not send.
      const p = parseResponse(headOnly ? raw.replace(/\r\ncontent-length: *\d+/i, '\r\ncontent-length: 0') : raw)
      resolve({ status: p?.status ?? 0, headers: p?.headers ?? {}, body: p?.body ?? '' })
    }
    const timer = setTimeout(finish, 15_000)
    sock.setEncoding('latin1')
    sock.on('data', (d: string) => { raw += d })
    sock.on('error', () => {})
    sock.on('close', finish)
    sock.on('connect', () => { sock.write(body ? Buffer.concat([head, body]) : head) })
  })
}

// ── What the ledger holds: compared before and after every case. ──

interface State { money: Map<string, { balance: bigint, journal: bigint, charges: bigint }>, rest: string, audit: number, last?: { action: string, result: string, status?: number } }

async function stateOf (ledger: Ledger): Promise<State> {
  const money = new Map((await ledger.verify()).map(c => [c.organization, { balance: c.balance, journal: c.journal, charges: c.charges }]))
  const keys = (await ledger.listKeys()).map(k => ({ ...k, lastUsedAt: undefined }))
  const rest = JSON.stringify([(await ledger.listOrganizations()).map(o => [o.id, o.name ?? null]), await ledger.listProjects(), keys, await ledger.listPrices()])
  const last = (await ledger.listAudit({ limit: 1 }))[0]
  return { money, rest, audit: last?.id ?? 0, ...(last ? { last: { action: last.action, result: last.result, ...(last.status != null ? { status: last.status } : {}) } } : {}) }
}

const moneyText = (s: State): string => JSON.stringify([...s.money].sort(([a], [b]) => a < b ? -1 : 1), (_, v: unknown) => typeof v === 'bigint' ? String(v) : v)

// ── Shapes of the answers. ──

const MONEY = /^-?\d+\.\d{6}$/
const isMoney = (v: unknown): boolean => typeof v === 'string' && MONEY.test(v)
const isStr = (v: unknown): boolean => typeof v === 'string'
const page = (b: unknown): boolean => Array.isArray(get(b, 'data')) && (get(b, 'nextCursor') === null || isStr(get(b, 'nextCursor')))
const orgDetail = (b: unknown): boolean => isStr(get(b, 'id')) && ['balance', 'reserved', 'available'].every(f => isMoney(get(b, f)))
const posted = (b: unknown): boolean => isStr(get(b, 'organization')) && isMoney(get(b, 'balance')) && isMoney(get(b, 'entry', 'amount')) && get(b, 'entry', 'balance') === get(b, 'balance')
const keyShape = (b: unknown): boolean => isStr(get(b, 'id')) && isStr(get(b, 'prefix')) && isMoney(get(b, 'spent')) && Array.isArray(get(b, 'tags'))
const dataOf = (item: (v: unknown) => boolean) => (b: unknown): boolean => Array.isArray(get(b, 'data')) && list(b, 'data').every(item)
const sums = (b: unknown): boolean => Number.isSafeInteger(get(b, 'requests')) && isMoney(get(b, 'cost'))
const summary = (b: unknown): boolean => sums(get(b, 'total')) && list(b, 'groups').every(sums) && list(b, 'series').every(sums) && Array.isArray(get(b, 'series'))
const callSums = (b: unknown): boolean => get(b, 'scope') === 'replica' && Number.isSafeInteger(get(b, 'total', 'requests')) && Array.isArray(get(b, 'series'))

// ── The routes: method, path template, query parameters, body. ──

type Kind = 'read' | 'write' | 'money'
interface Route { name: string, method: string, path: string, kind: Kind, query?: string[], body?: (s: Seeds) => Record<string, unknown>, shape: (b: unknown) => boolean }
interface Seeds { orgs: string[], projects: string[], keys: string[], traces: string[], models: string[], circuits: string[], pick: <T>(xs: readonly T[]) => T, int: (n: number) => number }

const AMOUNTS = ['0.000001', '0.5', '1', '12.50', '0.123456', '100']
const USAGE_Q = ['from', 'to', 'organization', 'project', 'key', 'model']
const ROUTES: Route[] = [
  { name: 'orgs', method: 'GET', path: '/admin/organizations', kind: 'read', shape: dataOf(o => isStr(get(o, 'id')) && isMoney(get(o, 'balance'))) },
  { name: 'org.create', method: 'POST', path: '/admin/organizations', kind: 'write', shape: orgDetail, body: s => ({ id: s.int(3) ? `org-${s.int(1e6)}` : `${s.int(1e6)}-${'@:.'.repeat(43)}`.slice(0, 128), name: 'Fuzz Inc' }) },
  { name: 'org', method: 'GET', path: '/admin/organizations/:org', kind: 'read', shape: orgDetail },
  { name: 'balance', method: 'GET', path: '/admin/organizations/:org/balance', kind: 'read', shape: b => ['balance', 'reserved', 'available'].every(f => isMoney(get(b, f))) },
  { name: 'topup', method: 'POST', path: '/admin/organizations/:org/topup', kind: 'money', shape: posted, body: s => ({ amount: s.pick(AMOUNTS), reason: 'fuzz top-up' }) },
  { name: 'adjust', method: 'POST', path: '/admin/organizations/:org/adjustments', kind: 'money', shape: posted,
    body: s => ({ amount: (s.int(2) ? '-' : '') + s.pick(AMOUNTS), reason: 'fuzz correction' }) },
  { name: 'refund', method: 'POST', path: '/admin/organizations/:org/refunds', kind: 'money', shape: posted,
    body: s => ({ amount: s.pick(['0.000001', '0.0001', '0.001']), reason: 'fuzz refund', ...(s.int(2) ? { traceId: s.pick(s.traces) } : {}) }) },
  { name: 'journal', method: 'GET', path: '/admin/organizations/:org/journal', kind: 'read', query: ['limit', 'cursor'], shape: b => page(b) && list(b, 'data').every(e => isMoney(get(e, 'amount'))) },
  { name: 'verify', method: 'GET', path: '/admin/verify', kind: 'read', shape: b => typeof get(b, 'ok') === 'boolean' && Number.isSafeInteger(get(b, 'organizations')) },
  { name: 'audit', method: 'GET', path: '/admin/audit', kind: 'read', query: ['actor', 'action', 'target', 'from', 'to', 'limit', 'cursor'], shape: page },
  { name: 'projects', method: 'GET', path: '/admin/projects', kind: 'read', query: ['organization'], shape: dataOf(p => isStr(get(p, 'organization'))) },
  { name: 'project.create', method: 'POST', path: '/admin/projects', kind: 'write', shape: b => isStr(get(b, 'id')) && isStr(get(b, 'organization')),
    body: s => ({ id: `proj-${s.int(1e6)}`, organization: s.pick(s.orgs), name: 'p' }) },
  { name: 'keys', method: 'GET', path: '/admin/keys', kind: 'read', shape: dataOf(keyShape) },
  { name: 'key', method: 'GET', path: '/admin/keys/:key', kind: 'read', shape: keyShape },
  { name: 'key.create', method: 'POST', path: '/admin/keys', kind: 'write', shape: b => keyShape(b) && /^sk-gw-/.test(String(get(b, 'secret'))),
    body: s => ({ organization: s.pick(s.orgs), id: `key-${s.int(1e6)}`, models: ['echo/*'], tags: ['team:fuzz'], budget: { amount: '5', window: 'day' }, lifetimeBudget: '50', rpm: 60, tpm: 1000,
      expiresAt: '2099-01-01T00:00:00Z', name: 'k' }) },
  { name: 'key.update', method: 'PATCH', path: '/admin/keys/:key', kind: 'write', shape: keyShape,
    body: s => ({ name: 'renamed', models: ['*'], tags: ['a', 'b'], budget: { amount: '1.5', window: 3600 }, lifetimeBudget: null, rpm: s.int(100) + 1, expiresAt: '2098-12-31' }) },
  { name: 'key.rotate', method: 'POST', path: '/admin/keys/:key/rotate', kind: 'write', shape: b => keyShape(b) && isStr(get(b, 'secret')), body: s => ({ graceSeconds: s.int(7200) }) },
  { name: 'key.revoke', method: 'POST', path: '/admin/keys/:key/revoke', kind: 'write', shape: keyShape },
  { name: 'prices', method: 'GET', path: '/admin/prices', kind: 'read', shape: dataOf(p => isStr(get(p, 'model')) && isStr(get(p, 'source'))) },
  { name: 'price.set', method: 'PUT', path: '/admin/prices', kind: 'write', shape: b => isStr(get(b, 'model')) && get(b, 'source') === 'ledger',
    body: s => ({ model: s.pick(s.models), input: 1.25, output: 3, cachedInput: 0.125, cacheWrite: 1.5, cacheWrite1h: 2 }) },
  { name: 'usage', method: 'GET', path: '/admin/usage', kind: 'read', query: [...USAGE_Q, 'limit', 'order', 'cursor'], shape: b => page(b) && list(b, 'data').every(r => isMoney(get(r, 'cost'))) },
  { name: 'usage.total', method: 'GET', path: '/admin/usage/total', kind: 'read', query: USAGE_Q, shape: sums },
  { name: 'usage.export', method: 'GET', path: '/admin/usage/export', kind: 'read', query: [...USAGE_Q, 'format'], shape: () => true },
  { name: 'usage.summary', method: 'GET', path: '/admin/usage/summary', kind: 'read', query: [...USAGE_Q, 'bucket', 'groupBy', 'top'], shape: summary },
  { name: 'calls.summary', method: 'GET', path: '/admin/calls/summary', kind: 'read', query: ['from', 'to', 'bucket', 'groupBy', 'top'], shape: callSums },
  { name: 'calls.latency', method: 'GET', path: '/admin/calls/latency', kind: 'read', query: ['from'], shape: b => get(b, 'scope') === 'replica' && Array.isArray(get(b, 'data')) },
  { name: 'calls.failed', method: 'GET', path: '/admin/calls/failed', kind: 'read', query: ['kind', 'limit'], shape: b => get(b, 'scope') === 'replica' && Array.isArray(get(b, 'data')) },
  { name: 'providers', method: 'GET', path: '/admin/providers', kind: 'read', shape: dataOf(p => isStr(get(p, 'name'))) },
  { name: 'holds', method: 'GET', path: '/admin/reservations', kind: 'read', query: ['organization', 'key', 'kind'], shape: b => typeof get(b, 'stored') === 'boolean' && Array.isArray(get(b, 'data')) },
  { name: 'hold.release', method: 'DELETE', path: '/admin/reservations/:hold', kind: 'write', shape: b => isStr(get(b, 'released')) },
  { name: 'circuits', method: 'GET', path: '/admin/circuits', kind: 'read', shape: dataOf(c => isStr(get(c, 'key')) && isStr(get(c, 'state'))) },
  { name: 'circuit.reset', method: 'POST', path: '/admin/circuits/reset', kind: 'write', shape: b => isStr(get(b, 'state')), body: s => ({ key: s.pick(s.circuits) }) },
  { name: 'config', method: 'GET', path: '/admin/config', kind: 'read', shape: b => isStr(get(b, 'configVersion')) && typeof get(b, 'config') === 'object' },
  { name: 'openapi', method: 'GET', path: '/admin/openapi.json', kind: 'read', shape: b => isStr(get(b, 'openapi')) },
]

// ── Generators. ──

/** Ids that exist nowhere, raw in the path: encoded, traversal-like, unicode, NUL, long. */
const ODD_SEGMENTS = ['%00', 'org-a%00', '..', '%2e%2e', '..%2f..%2fetc%2fpasswd', '%2F', 'a%2Fb', '%ZZ', '%', '%C3%BCn%C3%AF', 'ünï', '%ED%A0%80', '%FF', '%C0%AF',
  '%20', 'a%20b', '__proto__', 'constructor', 'null', '-1', '1e400', 'a'.repeat(128), 'a'.repeat(129), 'a'.repeat(201), 'x'.repeat(5000), '%2e%2e%2f%2e%2e%2fadmin%2fkeys',
  '00000000-0000-0000-0000-000000000000', 'org-a;drop', "o'; --", '%E2%80%AE', '%F0%9F%92%B8']
const ODD_VALUES = ['', '-1', '0', '1', '2', '1000', '1001', '1e3', '1.5', '-0', 'NaN', 'Infinity', '9'.repeat(30), '0x10', 'abc', '%ZZ', '%00', 'ünï', 'a'.repeat(300),
  '2025-13-45', '2025-02-30T25:61:00Z', '2025-01-01', '2025-01-01T00:00:00Z', '1970-01-01', '0000-01-01', '9999-12-31T23:59:59Z', '2025-01-01garbage', '2025-01-01T00:00:00+99:99',
  'minute', 'hour', 'day', 'week', 'model', 'organization', 'key', 'project', 'tag', 'nope', 'asc', 'desc', 'csv', 'json', 'xml', 'server', 'client', 'MTcwMDAwMDAwMDAwMC4x', '!!', '[]']
/** Amounts, numbers and other values put where a body's fields were. */
const ODD_AMOUNTS = ['0', '-0', '-1', '0.0000001', '1.1234567', '1e3', 'NaN', '', ' 1', '1.', '.5', '+1', '0x10', '١٢', '9007199254.740991', '9007199254.740992',
  '999999999999.999999', '-999999999999.999999', '4503599627.370496', '1,5', '12.50\u0000']
const ODD_NUMBERS = ['1e400', '-1e400', '-0', '1e-7', '0.0000001', '1.0000005', '9007199254740993', '1e9', '1000000000.5', '-1', '0', '2592001', '59', '31622401', '1.5', '3']
const ODD_STRINGS = ['', ' ', '\u0000', '\ud800', 'x'.repeat(501), 'x'.repeat(201), 'ünï 💸', '<script>', '=SUM(A1)', 'a'.repeat(129), '*', '**', 'op*nai', 'echo/*', 'day', 'month', '\t']

interface Case { name: string, route?: Route, method: string, path: string, auth: 'valid' | 'none' | 'wrong' | 'revoked' | 'client', bearer: boolean, odd: boolean, head: Buffer, body?: Buffer, org?: string, delta?: number }

function generate (rnd: () => number, s: Seeds): Case {
  const { pick, int } = s
  const route = pick(ROUTES)
  // Path ids: mostly existing ones, else a valid id nobody made, else an odd raw segment.
  const id = (known: readonly string[]): { raw: string, plain?: string } => {
    const r = rnd()
    if (r < 0.6 && known.length) { const v = pick(known); return { raw: encodeURIComponent(v), plain: v } }
    if (r < 0.75) { const v = `nobody-${int(1e6)}`; return { raw: v, plain: v } }
    odd = true
    return { raw: pick(ODD_SEGMENTS) }
  }
  let org: string | undefined
  /** Whether the URL holds a raw odd segment or value (else every part is an id or value percent-encoded, which must route). */
  let odd = false
  let path = route.path.replace(/:(\w+)/g, (_, p: string) => {
    const r = id(p === 'org' ? s.orgs : p === 'key' ? s.keys : [])
    if (p === 'org') org = r.plain
    return r.raw
  })
  let method = route.method
  let wrong = false
  if (rnd() < 0.08) { method = pick(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND']); wrong = method !== route.method }
  if (rnd() < 0.05) { path = pick([`${path}/`, `${path}/x`, path.toUpperCase(), `/${path}`, path.replace('/admin/', '/admin/./'), path.replace('/admin/', '/v1/'), '/', '/admin', '/admin/']); wrong = true }
  // The query: its parameters with odd values, unknown ones, repeats, empty ones.
  const params: string[] = []
  if (route.query && rnd() < 0.85) {
    for (let i = int(5); i > 0; i--) {
      const name = rnd() < 0.85 ? pick(route.query) : pick(['foo', 'limit[]', '__proto__', '', 'LIMIT', 'groupby'])
      const v = rnd() < 0.7 ? pick(ODD_VALUES) : pick([...s.orgs, ...s.keys, ...s.projects, ...s.models])
      const encoded = rnd() < 0.85
      odd ||= !encoded
      params.push(`${encodeURIComponent(name)}=${encoded ? encodeURIComponent(v) : v.replace(/[\s#]/g, '')}`)
    }
  } else if (rnd() < 0.1) {
    params.push(pick(['limit=1&limit=2', 'x', '=', '&&', 'limit', '%ZZ=1']))
    odd = true
  }
  if (params.length) path += `?${params.join('&')}`
  // The body: the route's valid one, then maybe mutated.
  let text: string | undefined
  let contentType: string | undefined = 'application/json'
  let name = `${method} ${path.slice(0, 100)}`
  if (route.body || (wrong && rnd() < 0.5)) {
    const body = route.body ? route.body(s) : { amount: '1' }
    const r = rnd()
    let raw: string | undefined
    const paths = pathsOf(body)
    if (r < 0.35 || !paths.length) {
      // as made
    } else if (r < 0.5) {
      const p = pick(paths)
      const v = pick<unknown>([pick(ODD_AMOUNTS), pick(ODD_STRINGS), null, true, [], {}, [1, 'a'], { amount: '1' }, int(1e6) - 5e5, rnd(), -1, 1e308, `@@${pick(ODD_NUMBERS)}@@`])
      setPath(body, p, v)
      name += ` ${p.join('.')}=${JSON.stringify(v)?.slice(0, 30)}`
    } else if (r < 0.6) {
      const p = pick(paths); setPath(body, p, DELETE); name += ` without ${p.join('.')}`
    } else if (r < 0.67) {
      body[pick(['extra', '__proto__', 'constructor', 'organization', 'balance', 'kind', 'actor'])] = pick<unknown>(['x', 1, { polluted: true }]); name += ' extra field'
    } else if (r < 0.74) {
      const p = pick(paths); const depth = pick([10, 200, 5000]); setPath(body, p, '@@NEST@@')
      raw = JSON.stringify(body).replace('"@@NEST@@"', '['.repeat(depth) + '1' + ']'.repeat(depth)); name += ` nested ${depth} at ${p.join('.')}`
    } else if (r < 0.82) {
      const full = JSON.stringify(body)
      raw = pick([full.slice(0, int(full.length)), full.replace(/"/, "'"), `${full},`, `${full}${full}`, 'null', '[]', '"x"', '1', '', ' ', '{', '{"a":1,"a":2}', '\u00ff\u00fe', 'NaN'])
      name += ` bad JSON ${JSON.stringify(raw.slice(0, 30))}`
    } else if (r < 0.9) {
      contentType = pick([undefined, 'text/plain', 'application/json; charset=latin1', 'application/x-www-form-urlencoded', 'application/jsonx', 'multipart/form-data; boundary=x', ''])
      name += ` content-type ${contentType}`
    } else {
      // Money past its bounds, where a write would pass it.
      if ('amount' in body) body.amount = pick(['9007199254.740991', '9007199254.740992', '999999999999.999999', '4503599627.370496', '-9007199254.740991'])
      name += ` big ${JSON.stringify(body).slice(0, 60)}`
    }
    text = raw ?? JSON.stringify(body).replace(/"@@([^"@]*)@@"/g, '$1')
  }
  const auth = rnd() < 0.75 ? 'valid' : pick(['none', 'wrong', 'revoked', 'client'] as const)
  const authorization = { valid: `Bearer ${ADMIN_KEY}`, none: undefined, wrong: pick(['Bearer adm-wrong-0000000000000000', `Bearer ${ADMIN_KEY}x`, `Basic ${ADMIN_KEY}`]),
    revoked: `Bearer ${REVOKED_ADMIN_KEY}`, client: `Bearer ${TEST_KEY}` }[auth]
  const bodyBuf = text === undefined ? undefined : Buffer.from(text)
  const lines = [`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1', 'connection: close', ...(authorization ? [`authorization: ${authorization}`] : []),
    ...(bodyBuf ? [`content-length: ${bodyBuf.length}`, ...(contentType !== undefined ? [`content-type: ${contentType}`] : [])] : [])]
  let delta: number | undefined
  if (route.kind === 'money' && text !== undefined) { try { delta = parseAmount(String(get(JSON.parse(text), 'amount'))) } catch { /* no amount */ } }
  return { name: `${auth} ${name}`, ...(wrong ? {} : { route }), method, path, auth, bearer: /^Bearer /.test(authorization ?? ''), odd, head: Buffer.from(lines.join('\r\n') + '\r\n\r\n'), ...(bodyBuf ? { body: bodyBuf } : {}), ...(org ? { org } : {}), ...(delta !== undefined ? { delta } : {}) }
}

/** What is wrong with an error answer: not the admin error body, its code not the status, no trace id. */
function errorProblem (r: Res): string | undefined {
  let b: unknown
  try { b = JSON.parse(r.body) } catch { return `error body is not JSON: ${r.body.slice(0, 150)}` }
  const meta = get(b, 'error', 'metadata')
  const path = get(meta, 'path')
  if (get(b, 'error', 'code') !== r.status || !isStr(get(b, 'error', 'message')) || (meta !== undefined && (typeof meta !== 'object' || meta === null))) return `not the admin error body: ${r.body.slice(0, 200)}`
  if (path !== undefined && !(isStr(path) && /^\/(body|querystring|params)(\/|$)/.test(String(path)))) return `metadata.path names no field: ${r.body.slice(0, 200)}`
  if (!r.headers['x-gw-trace-id']) return 'no x-gw-trace-id'
  return undefined
}

async function fuzz (t: Test, ledger: Ledger, label: string): Promise<void> {
  const { admin, app } = await running(t, ledger)
  const port = Number(new URL(admin).port)
  // Seeds: organizations with balances, a project, keys, charged calls to refund.
  const orgs = ['org-a', 'org-b', 'org.c@x:1']
  for (const o of orgs) { await ledger.createOrganization(o); await ledger.topUp(o, 50_000_000) }
  await ledger.createProject('proj-a', 'org-a')
  const traces: string[] = []
  for (let i = 0; i < 6; i++) {
    const trace = `trace-${label}-${i}`
    traces.push(trace)
    await ledger.charge(undefined, { time: Date.now() - i * 3_600_000, keyId: 'key-test', organization: orgs[i % 3], project: 'proj-a', model: 'echo/echo-1', provider: 'echo',
      traceId: trace, inputTokens: 100, cachedInputTokens: 0, outputTokens: 50, cost: 1000 + i, estimated: false })
  }
  t.ok(await until(async () => (await ledger.listUsage({})).length === traces.length, 10_000), 'the seeded charges committed')
  const rnd = prng(SEED)
  const seeds: Seeds = {
    orgs, projects: ['proj-a'], keys: [], traces: [...traces, 'trace-nobody'], models: [...app.gateway.catalog.all().map(m => m.id), 'not/in-catalog'],
    circuits: [...list(JSON.parse((await send(port, '127.0.0.1', Buffer.from(`GET /admin/circuits HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: Bearer ${ADMIN_KEY}\r\n\r\n`))).body), 'data')
      .map(c => String(get(c, 'key'))), 'nope/nope'],
    pick: xs => xs[Math.floor(rnd() * xs.length)]!, int: n => Math.floor(rnd() * n),
  }
  /** Source addresses of requests without the admin key, and the wrong keys each sent (throttled past ten). */
  const failed = new Map<string, number>()
  const failures: string[] = []
  const statuses = new Map<number, number>()
  let state = await stateOf(ledger)
  const expected = new Map([...state.money].map(([o, m]) => [o, m.balance]))

  for (let i = 0; i < CASES; i++) {
    const c = generate(rnd, seeds)
    // The admin key from 127.0.0.1; the rest from 127.0.0.2 (often: it gets throttled) or six others.
    const from = c.auth === 'valid' ? '127.0.0.1' : `127.0.0.${seeds.int(10) < 4 ? 2 : 3 + seeds.int(6)}`
    const res = await send(port, from, c.head, c.body, c.method === 'HEAD')
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
    const problems: string[] = []
    const publicRoute = c.path.split('?')[0] === '/admin/openapi.json'
    const ok = res.status >= 200 && res.status < 300
    if (res.status === 0) problems.push('no answer')
    if (res.status >= 500) problems.push(`status ${res.status}: ${res.body.slice(0, 300)}`)
    if (res.status >= 400 && c.method !== 'HEAD') { const e = errorProblem(res); if (e) problems.push(e) }
    // The guard: only the admin key passes; 429 only after ten wrong keys from the address.
    if (c.auth !== 'valid' && !publicRoute) {
      // Keys sent as Bearer and refused count against the address; no key (or another scheme) is a missing one.
      const throttled = (failed.get(from) ?? 0) >= AUTH_FAILURES_ALLOWED
      const want = throttled ? 429 : c.auth === 'revoked' ? 403 : 401
      // A URL the router cannot read (bad percent-encoding, an overlong id) is refused before any route: 400, no data.
      // A HEAD answer has no body to say so: a 400 to one with a raw odd segment counts as that refusal.
      const unreadable = res.status === 400 && (c.method === 'HEAD' ? c.odd : /URL is malformed|not valid HTTP/.test(res.body))
      if (res.status !== want && !unreadable) problems.push(`status ${res.status} without the admin key (${c.auth}), expected ${want}`)
      if (res.status === 429 && !/^\d+$/.test(res.headers['retry-after'] ?? '')) problems.push('429 without Retry-After')
      if (c.bearer && (res.status === 401 || res.status === 403)) failed.set(from, (failed.get(from) ?? 0) + 1)
    } else if (c.auth === 'valid' && [401, 403, 429].includes(res.status)) {
      problems.push(`status ${res.status} with the admin key: ${res.body.slice(0, 200)}`)
    }
    // An URL made of ids and values percent-encoded reaches its route, whatever the id's length or characters.
    if (!c.odd && c.auth === 'valid' && /URL is malformed|not valid HTTP/.test(res.body)) problems.push(`a well-formed URL refused: ${res.body.slice(0, 200)}`)
    if (ok && !c.route && c.method !== 'GET' && c.method !== 'HEAD') problems.push(`${res.status} for a wrong method or path`)
    // A 2xx answer has its route's shape (the export: CSV with its header, or a JSON array).
    if (ok && c.route && c.method !== 'HEAD') {
      if (c.route.name === 'usage.export') {
        const csv = (res.headers['content-type'] ?? '').startsWith('text/csv')
        let json = false
        try { json = Array.isArray(JSON.parse(res.body)) } catch { /* not JSON */ }
        if (csv ? !res.body.startsWith(USAGE_CSV_HEADER) : !json) problems.push(`an export that is neither CSV nor a JSON array: ${res.body.slice(0, 120)}`)
      } else {
        let b: unknown
        try { b = JSON.parse(res.body) } catch { problems.push(`a ${res.status} that is not JSON: ${res.body.slice(0, 120)}`) }
        if (b !== undefined && !c.route.shape(b)) problems.push(`a ${res.status} not shaped as ${c.route.name}: ${res.body.slice(0, 200)}`)
      }
    }
    // What changed in the ledger: nothing after a refusal or a read; a money write moves its organization by its amount.
    const after = await stateOf(ledger)
    const write = ok && c.route !== undefined && c.route.kind !== 'read'
    if (!write) {
      if (moneyText(after) !== moneyText(state)) problems.push(`money changed by a ${res.status}: ${moneyText(state)} → ${moneyText(after)}`)
      if (after.rest !== state.rest) problems.push(`the ledger's records changed by a ${res.status}`)
    } else if (c.route!.kind === 'money') {
      const org = String(get(JSON.parse(res.body), 'organization'))
      const was = state.money.get(org)
      const now = after.money.get(org)
      const d = BigInt(c.delta ?? NaN)
      if (!was || !now || now.balance !== was.balance + d || now.journal !== was.journal + d || now.charges !== was.charges) problems.push(`${org} moved ${was?.balance}→${now?.balance}, not by ${d}`)
      else expected.set(org, now.balance)
      if (formatMicros(Number(now?.balance)) !== get(JSON.parse(res.body), 'balance')) problems.push(`the answer's balance is not the ledger's: ${res.body.slice(0, 200)}`)
      state.money.set(org, now ?? { balance: 0n, journal: 0n, charges: 0n })
      if (moneyText(after) !== moneyText(state)) problems.push(`a money write changed other organizations: ${moneyText(after)}`)
    } else {
      // Other writes move no money; a new organization starts at 0.
      for (const [o, m] of after.money) if (!state.money.has(o)) { state.money.set(o, m); if (m.balance !== 0n || m.journal !== 0n) problems.push(`new organization ${o} does not start at 0`); expected.set(o, 0n) }
      if (moneyText(after) !== moneyText(state)) problems.push(`a ${c.route!.name} moved money`)
    }
    if (c.auth !== 'valid' && after.audit !== state.audit) problems.push('a request refused by the guard was audited')
    // Every write the guard let through is audited once routed, done (ok) or refused (its code and status).
    if (c.auth === 'valid' && c.route && c.route.kind !== 'read' && !/URL is malformed|not valid HTTP/.test(res.body)) {
      const want = ok ? 'ok' : `GW_ERR_* ${res.status}`
      const got = after.last ? `${after.last.result} ${after.last.status ?? ''}`.trim() : 'nothing'
      if (after.audit <= state.audit || (ok ? got !== 'ok' : !(got.startsWith('GW_ERR_') && after.last?.status === res.status))) problems.push(`audit row: ${got}, expected ${want}`)
    }
    if (write) {
      const b = JSON.parse(res.body) as unknown
      if (c.route!.name === 'org.create') seeds.orgs.push(String(get(b, 'id')))
      if (c.route!.name === 'key.create') seeds.keys.push(String(get(b, 'id')))
      if (c.route!.name === 'project.create') seeds.projects.push(String(get(b, 'id')))
    }
    state = after
    if (problems.length) failures.push(`case ${i} (${c.name.slice(0, 200)}): ${problems.join('; ')}`)
  }
  t.comment(`${label} statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`)
  t.same(failures, [], `${CASES} cases, seed ${SEED}`)

  // After all cases: the ledger's verify, the admin API's, and the invariant recomputed here per organization.
  t.ok((await ledger.verify()).every(c => c.balance === c.journal - c.charges), 'the ledger\'s verify: every balance = journal − charges')
  const v = await send(port, '127.0.0.1', Buffer.from(`GET /admin/verify HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: Bearer ${ADMIN_KEY}\r\n\r\n`))
  t.match(JSON.parse(v.body), { ok: true, differences: [] }, 'GET /admin/verify agrees')
  const usage = await ledger.listUsage({})
  for (const o of await ledger.listOrganizations()) {
    const journal = (await ledger.listJournal({ organization: o.id, limit: 100_000 })).reduce((s, e) => s + e.amount, 0)
    const charges = usage.filter(u => u.organization === o.id).reduce((s, u) => s + u.cost, 0)
    t.equal(o.balance, journal - charges, `${o.id}: balance = Σ journal − Σ charges`)
    t.equal(BigInt(o.balance), expected.get(o.id), `${o.id}: the balance the successful writes made`)
  }
  const up = await send(port, '127.0.0.1', Buffer.from('GET /admin/openapi.json HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'))
  t.equal(up.status, 200, 'the admin listener is still up')
}

console.error(`# admin fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED} FUZZ_CASES=${CASES})`)
const url = await databaseUrl(t)

t.test(`admin API fuzz on SQLite – ${CASES} seeded cases (FUZZ_SEED=${SEED})`, async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-admin-fuzz-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const ledger = new SqliteLedger(join(dir, 'ledger.db'))
  await ledger.migrate()
  t.teardown(() => ledger.close())
  await fuzz(t, ledger, 'sqlite')
})

if (url !== undefined) {
  const fresh = pgLedgers(t, url, 'fuzz_admin')
  t.test(`admin API fuzz on PostgreSQL – ${CASES} seeded cases (FUZZ_SEED=${SEED})`, async t => {
    await fuzz(t, await fresh(t), 'postgres')
  })
}
