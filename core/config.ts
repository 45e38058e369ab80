/** @module config – read file + env → ajv-validate → deep-freeze; throws GW_ERR_CONFIG_* errors. */
import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { randomBytes } from 'node:crypto'
import { parse as parseYaml } from 'yaml'
import { GatewayConfigSchema, type GatewayConfig } from './config-schema.ts'
import { compileOrThrow, describeErrors } from './schema.ts'
import { gwError } from './errors.ts'
import { embeddedDefault } from './default-config.ts'

export type Env = Readonly<Record<string, string | undefined>>

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g

/** Replaces `${VAR}` and `${VAR:-fallback}` in every string of a parsed document. */
export function substituteEnv (value: unknown, env: Env, source: string): unknown {
  if (typeof value === 'string') {
    return value.replace(ENV_REF, (_m, name: string, fallback: string | undefined) => {
      const v = env[name]
      if (v !== undefined && v !== '') return v
      if (fallback !== undefined) return fallback
      throw gwError('GW_ERR_CONFIG_ENV_MISSING', [source, name])
    })
  }
  if (Array.isArray(value)) return value.map(v => substituteEnv(v, env, source))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = substituteEnv(v, env, source)
    return out
  }
  return value
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
    throw gwError('GW_ERR_CONFIG_INVALID', [source, '/', (err as Error).message.split('\n')[0]], { cause: err })
  }
}

function envInt (env: Env, name: string, source: string): number | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  if (!/^\d+$/.test(raw)) throw gwError('GW_ERR_CONFIG_INVALID', [`environment ${name}`, '/', `must be a whole number, got "${raw}"`])
  void source
  return Number(raw)
}

/** Result of loading: the frozen config, and the demo key when the embedded default made one. */
export interface LoadedConfig {
  config: GatewayConfig
  demoKey?: string
}

/**
 * Builds the config from a document (already parsed) or the embedded default, applies env
 * overrides, validates, fills defaults and freezes. Throws GW_ERR_CONFIG_* on any problem.
 */
export function buildConfig (doc: unknown, source: string, baseDir: string, env: Env): GatewayConfig {
  const withEnv = substituteEnv(doc ?? {}, env, source) as Record<string, any>
  if (withEnv === null || typeof withEnv !== 'object' || Array.isArray(withEnv)) {
    throw gwError('GW_ERR_CONFIG_INVALID', [source, '/', 'must be an object'])
  }
  const server = (withEnv.server ??= {})
  if (typeof server === 'object' && server !== null) {
    const port = envInt(env, 'PORT', source)
    if (port !== undefined) server.port = port
    if (env.HOST) server.host = env.HOST
    const limit = envInt(env, 'GATEWAY_OPENAPI_MAX_REQUEST_BODY_BYTES', source)
    if (limit !== undefined) {
      server.bodyLimitBytes = limit
      // The spec names this variable for the size limit: it also sets size-limit's own maxBytes.
      for (const entry of (Array.isArray(withEnv.pipeline) ? withEnv.pipeline : [])) {
        if (entry?.plugin === 'size-limit') entry.config = { ...(entry.config ?? {}), maxBytes: limit }
      }
    }
  }
  const validate = compileOrThrow(GatewayConfigSchema, 'config')
  if (!validate(withEnv)) {
    const { path, message } = describeErrors(validate.errors)
    throw gwError('GW_ERR_CONFIG_INVALID', [source, path, message])
  }
  // node's HTTP server refuses a headers timeout longer than the whole-request timeout.
  if (withEnv.server.headersTimeoutMs > withEnv.server.bodyTimeoutMs) {
    throw gwError('GW_ERR_CONFIG_INVALID', [source, '/server/headersTimeoutMs', 'must not exceed server.bodyTimeoutMs'])
  }
  Object.defineProperty(withEnv, 'source', { value: source, enumerable: false })
  Object.defineProperty(withEnv, 'baseDir', { value: baseDir, enumerable: false })
  return withEnv as GatewayConfig
}

/** Loads `GATEWAY_CONFIG` (YAML or JSON) or the embedded default. Not frozen: core freezes after plugin defaults fill in. */
export function loadConfig (env: Env = process.env): LoadedConfig {
  const file = env.GATEWAY_CONFIG
  if (!file) {
    const demoKey = env.GATEWAY_DEMO_KEY || `sk-gw-demo-${randomBytes(18).toString('base64url')}`
    return { config: buildConfig(embeddedDefault(demoKey), 'embedded default', process.cwd(), env), demoKey }
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
