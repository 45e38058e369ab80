/** @module config – read file + env → ajv-validate → deep-freeze; throws GW_ERR_CONFIG_* errors. */
import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { createHash, randomBytes } from 'node:crypto'
import { parse as parseYaml } from 'yaml'
import { GatewayConfigSchema, type GatewayConfig } from './config-schema.ts'
import { compileOrThrow, describeErrors } from './schema.ts'
import { gwError } from '../errors/errors.ts'
import { badProxyEntry } from './trusted-proxies.ts'
import { embeddedDefault } from './default-config.ts'

export type Env = Readonly<Record<string, string | undefined>>

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g

/**
 * Replaces `${VAR}` and `${VAR:-fallback}` in every string of a parsed document. The JSON pointer of
 * every string that held a reference goes into `substituted`: only those may be coerced to the
 * number or boolean their schema asks for (a literal "8080" in the file stays a string).
 */
export function substituteEnv (value: unknown, env: Env, source: string, path = '', substituted?: Set<string>): unknown {
  if (typeof value === 'string') {
    let hit = false
    const out = value.replace(ENV_REF, (_m, name: string, fallback: string | undefined) => {
      hit = true
      const v = env[name]
      if (v !== undefined && v !== '') return v
      if (fallback !== undefined) return fallback
      throw gwError('GW_ERR_CONFIG_ENV_MISSING', [source, path || '/', name])
    })
    if (hit) substituted?.add(path)
    return out
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, env, source, `${path}/${i}`, substituted))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = substituteEnv(v, env, source, `${path}/${escapePointer(k)}`, substituted)
    return out
  }
  return value
}

/** A key as one JSON Pointer segment (`~` → `~0`, `/` → `~1`). */
export function escapePointer (key: string): string { return key.replace(/~/g, '~0').replace(/\//g, '~1') }
function unescapePointer (seg: string): string { return seg.replace(/~1/g, '/').replace(/~0/g, '~') }

/**
 * The JSON Pointer of the first string or key holding a NUL character in `parts` (each part's
 * name its first segment: `/models/0/id`, `/body/reason`), or undefined. PostgreSQL text cannot
 * hold one (the statement fails), so neither the config nor the admin API may bring one in.
 * Walked without recursion: a document may nest deep.
 */
export function nulField (parts: Record<string, unknown>): string | undefined {
  const stack: Array<[unknown, string]> = Object.entries(parts).map(([k, v]) => [v, `/${escapePointer(k)}`])
  while (stack.length) {
    const [v, path] = stack.pop()!
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return path
    } else if (v !== null && typeof v === 'object') {
      for (const [k, c] of Object.entries(v)) {
        const at = `${path}/${escapePointer(k)}`
        if (k.includes('\u0000')) return at
        stack.push([c, at])
      }
    }
  }
  return undefined
}

type SchemaNode = { type?: string | string[], properties?: Record<string, SchemaNode>, patternProperties?: Record<string, SchemaNode>, additionalProperties?: boolean | SchemaNode,
  items?: SchemaNode | SchemaNode[], anyOf?: SchemaNode[], oneOf?: SchemaNode[], allOf?: SchemaNode[] }

/** The sub-schemas that may apply at one step below `nodes` (every branch of a union is kept). */
function stepInto (nodes: SchemaNode[], seg: string): SchemaNode[] {
  const out: SchemaNode[] = []
  const visit = (n: SchemaNode | undefined): void => {
    if (!n || typeof n !== 'object') return
    for (const alt of [...n.anyOf ?? [], ...n.oneOf ?? [], ...n.allOf ?? []]) visit(alt)
    const pattern = Object.entries(n.patternProperties ?? {}).find(([re]) => new RegExp(re, 'u').test(seg))
    if (n.properties && Object.hasOwn(n.properties, seg)) out.push(n.properties[seg])
    else if (pattern) out.push(pattern[1])
    else if (n.additionalProperties && typeof n.additionalProperties === 'object') out.push(n.additionalProperties)
    if (n.items && /^\d+$/.test(seg)) out.push(Array.isArray(n.items) ? n.items[Number(seg)] : n.items)
  }
  for (const n of nodes) visit(n)
  return out
}

function typesOf (nodes: SchemaNode[]): Set<string> {
  const types = new Set<string>()
  const visit = (n: SchemaNode | undefined): void => {
    if (!n || typeof n !== 'object') return
    for (const alt of [...n.anyOf ?? [], ...n.oneOf ?? []]) visit(alt)
    for (const t of [n.type ?? []].flat()) types.add(t)
  }
  for (const n of nodes) visit(n)
  return types
}

/** An object or array whose members can be read and written by key (config documents are plain JSON). */
function isRecord (v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null
}

/**
 * Turns a substituted string into the number, integer or boolean the schema wants at its path.
 * Rule: only strings that came from `${VAR}` (their pointers, relative to `base`, are in
 * `substituted`) and only where the schema accepts no string there. A value that does not parse
 * stays a string, so validation names the path and says what it must be.
 */
export function coerceSubstituted (doc: unknown, schema: object, substituted: ReadonlySet<string>, base = ''): void {
  for (const pointer of substituted) {
    if (base !== '' && !pointer.startsWith(base + '/')) continue
    const segs = pointer.slice(base.length).split('/').slice(1).map(unescapePointer)
    if (segs.length === 0) continue
    let parent: unknown = doc
    for (const seg of segs.slice(0, -1)) parent = isRecord(parent) ? parent[seg] : undefined
    const last = segs[segs.length - 1]
    if (!isRecord(parent) || typeof parent[last] !== 'string') continue
    let nodes: SchemaNode[] = [schema as SchemaNode]
    for (const seg of segs) nodes = stepInto(nodes, seg)
    const types = typesOf(nodes)
    if (types.has('string') || types.size === 0) continue
    const raw = (parent[last] as string).trim()
    if (types.has('integer') && /^-?\d+$/.test(raw)) parent[last] = Number(raw)
    else if (types.has('number') && /^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(raw)) parent[last] = Number(raw)
    else if (types.has('boolean') && (raw === 'true' || raw === 'false')) parent[last] = raw === 'true'
  }
}

/**
 * Freezes a value and everything reachable from it. Iterative, with an explicit stack: request
 * bodies are frozen too, and no walk over client data may overflow the call stack.
 */
export function deepFreeze<T> (obj: T): T {
  const stack: unknown[] = [obj]
  while (stack.length > 0) {
    const v = stack.pop()
    if (v === null || typeof v !== 'object' || Object.isFrozen(v)) continue
    Object.freeze(v)
    for (const child of Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push(child)
    }
  }
  return obj
}

function parseDocument (text: string, source: string): unknown {
  try {
    return /\.json$/i.test(source) ? JSON.parse(text) : parseYaml(text)
  } catch (err) {
    // A syntax error has no path inside the document yet: its line and column stand for it.
    const pos = (err as { linePos?: { line: number, col: number }[] }).linePos?.[0]
    const first = (err as Error).message.split('\n')[0]
    if (pos) throw gwError('GW_ERR_CONFIG_INVALID', [source, `line ${pos.line}, column ${pos.col}`, first.replace(/ at line \d+, column \d+:?$/, '')], { cause: err })
    throw gwError('GW_ERR_CONFIG_INVALID', [source, '/', first], { cause: err })
  }
}

function envInt (env: Env, name: string, source: string): number | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  if (!/^\d+$/.test(raw)) throw gwError('GW_ERR_CONFIG_INVALID', [`environment ${name}`, '/', `must be a whole number, got "${raw}"`])
  void source
  return Number(raw)
}

/**
 * Pointers of the strings `${VAR}` filled, per built config: plugin and adapter configs have their
 * own schemas, so their values are coerced where those schemas are known (pipeline, providers).
 */
const substitutedPaths = new WeakMap<object, ReadonlySet<string>>()
export function substitutedIn (config: object): ReadonlySet<string> { return substitutedPaths.get(config) ?? new Set() }

/** Result of loading: the frozen config, and the demo and admin keys when the embedded default made them. */
export interface LoadedConfig {
  config: GatewayConfig
  demoKey?: string
  /** The embedded default's admin key (env GATEWAY_ADMIN_KEY, else the older GW_ADMIN_KEY, else random): the console's sign-in. */
  adminKey?: string
}

/**
 * Builds the config from a document (already parsed) or the embedded default, applies env
 * overrides, validates, fills defaults and freezes. Throws GW_ERR_CONFIG_* on any problem.
 */
export function buildConfig (doc: unknown, source: string, baseDir: string, env: Env): GatewayConfig {
  const substituted = new Set<string>()
  const withEnv = substituteEnv(doc ?? {}, env, source, '', substituted)
  if (!isRecord(withEnv) || Array.isArray(withEnv)) {
    throw gwError('GW_ERR_CONFIG_INVALID', [source, '/', 'must be an object'])
  }
  // A NUL would reach the ledger in an id (a model's, an organization's) and fail every charge there.
  const nul = nulField(withEnv)
  if (nul !== undefined) throw gwError('GW_ERR_CONFIG_INVALID', [source, nul, 'must not contain a NUL character'])
  const server = (withEnv.server ??= {})
  if (isRecord(server)) {
    const port = envInt(env, 'PORT', source)
    if (port !== undefined) server.port = port
    if (env.HOST) server.host = env.HOST
    const limit = envInt(env, 'GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES', source)
    if (limit !== undefined) {
      server.bodyLimitBytes = limit
      // This variable names the request size limit: it also sets size-limit's own maxBytes.
      for (const entry of (Array.isArray(withEnv.pipeline) ? withEnv.pipeline : [])) {
        if (!isRecord(entry) || entry.plugin !== 'size-limit') continue
        // A config that is not an object stays, for validation to name it.
        const cfg = entry.config ?? {}
        if (isRecord(cfg)) entry.config = { ...cfg, maxBytes: limit }
      }
    }
  }
  // ADMIN_PORT moves the admin listener like PORT moves the main one (when there is an admin block).
  const admin = withEnv.admin
  if (isRecord(admin)) {
    const port = envInt(env, 'ADMIN_PORT', source)
    if (port !== undefined) admin.port = port
  }
  coerceSubstituted(withEnv, GatewayConfigSchema, substituted)
  const validate = compileOrThrow(GatewayConfigSchema, 'config')
  if (!validate(withEnv)) {
    const { path, message } = describeErrors(validate.errors)
    throw gwError('GW_ERR_CONFIG_INVALID', [source, path, message])
  }
  const valid = withEnv as unknown as GatewayConfig
  // node's HTTP server refuses a headers timeout longer than the whole-request timeout.
  if (valid.server.headersTimeoutMs > valid.server.bodyTimeoutMs) {
    throw gwError('GW_ERR_CONFIG_INVALID', [source, '/server/headersTimeoutMs', 'must not exceed server.bodyTimeoutMs'])
  }
  for (const [i, entry] of valid.server.trustedProxies.entries()) {
    const bad = badProxyEntry(entry)
    if (bad !== undefined) throw gwError('GW_ERR_CONFIG_INVALID', [source, `/server/trustedProxies/${i}`, bad])
  }
  // Metrics collected but served nowhere would be a silent loss: refused at start-up.
  if (valid.metrics.listen === 'admin' && valid.admin === undefined) {
    throw gwError('GW_ERR_CONFIG_INVALID', [source, '/metrics/listen', '"admin" serves the metrics on the admin listener, which needs an admin block (or use "main" or "off")'])
  }
  // Admin keys are held as sha256 digests only: a plain key leaves the config once hashed.
  for (const [i, k] of (valid.admin?.keys ?? []).entries()) {
    if (!k.key === !k.hash) throw gwError('GW_ERR_CONFIG_INVALID', [source, `/admin/keys/${i}`, 'needs exactly one of "key" or "hash"'])
    if (k.key !== undefined) {
      k.hash = createHash('sha256').update(k.key).digest('hex')
      delete k.key
    }
  }
  Object.defineProperty(withEnv, 'source', { value: source, enumerable: false })
  Object.defineProperty(withEnv, 'baseDir', { value: baseDir, enumerable: false })
  substitutedPaths.set(withEnv, substituted)
  return valid
}

/** Loads `GATEWAY_CONFIG` (YAML or JSON) or the embedded default. Not frozen: core freezes after plugin defaults fill in. */
export function loadConfig (env: Env = process.env): LoadedConfig {
  const file = env.GATEWAY_CONFIG
  if (!file) {
    const demoKey = env.GATEWAY_DEMO_KEY || `sk-gw-demo-${randomBytes(18).toString('base64url')}`
    const adminKey = env.GATEWAY_ADMIN_KEY || env.GW_ADMIN_KEY || `gw-admin-${randomBytes(24).toString('base64url')}`
    return { config: buildConfig(embeddedDefault(demoKey, adminKey), 'embedded default', process.cwd(), env), demoKey, adminKey }
  }
  const path = resolve(file)
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw gwError('GW_ERR_CONFIG_READ', [path, (err as Error).message], { cause: err })
  }
  return { config: buildConfig(parseDocument(text, path), path, dirname(path), env) }
}
