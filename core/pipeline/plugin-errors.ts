/** @module plugin-errors – error codes plugins declare: checked at start-up, thrown through `deps.error`. */
import type { GatewayPlugin, PluginErrorSpec } from './plugin.ts'
import { ERRORS, gwError, pluginError, type ErrorSpec, type GatewayError, type GatewayErrorOptions } from '../errors/errors.ts'

/** Plugin error codes by code, with the plugin that declared each. */
export type PluginErrorTable = ReadonlyMap<string, { readonly plugin: string, readonly spec: ErrorSpec }>

const CODE = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/
const PUBLIC_CODE = /^[a-z][a-z0-9_]*$/
const TYPE = /^[a-z][a-z_]*$/

function invalid (plugin: string, code: string, why: string): never {
  throw gwError('GW_ERR_PLUGIN_ERROR_CODE', [plugin, code, why])
}

function specOf (plugin: string, code: string, e: PluginErrorSpec): ErrorSpec {
  if (!CODE.test(code)) invalid(plugin, code, 'a code is UPPER_SNAKE_CASE')
  if (typeof e !== 'object' || e === null) invalid(plugin, code, 'its definition is not an object')
  if (!Number.isInteger(e.status) || e.status < 400 || e.status > 599) invalid(plugin, code, `status must be an integer from 400 to 599, not ${String(e.status)}`)
  if (e.code !== undefined && (typeof e.code !== 'string' || !PUBLIC_CODE.test(e.code))) invalid(plugin, code, `code must be snake_case, not ${JSON.stringify(e.code)}`)
  if (typeof e.type !== 'string' || !TYPE.test(e.type)) invalid(plugin, code, `type (the messages-protocol error.type) must be snake_case, not ${JSON.stringify(e.type)}`)
  const m: Partial<Record<'en' | 'zh-CN' | 'zh', unknown>> = typeof e.message === 'object' && e.message !== null ? e.message : {}
  const texts = { en: m.en, 'zh-CN': m['zh-CN'] ?? m.zh }
  for (const [locale, text] of Object.entries(texts)) {
    if (typeof text !== 'string' || text.trim() === '') invalid(plugin, code, `message['${locale}'] must be a non-empty string`)
  }
  const { en, 'zh-CN': zhCN } = texts as { en: string, 'zh-CN': string }
  const spec: ErrorSpec = { status: e.status, message: en, messagesType: e.type, texts: Object.freeze({ en, 'zh-CN': zhCN }) }
  if (e.code !== undefined) spec.publicCode = e.code
  return Object.freeze(spec)
}

/**
 * Every code the plugins declare, in pipeline order. A code must be new: one core defines, or
 * another plugin declared, is refused with both owners named, so no client ever sees one code
 * with two meanings.
 */
export function checkPluginErrors (plugins: readonly GatewayPlugin[]): PluginErrorTable {
  const table = new Map<string, { plugin: string, spec: ErrorSpec }>()
  for (const plugin of plugins) {
    for (const [code, e] of Object.entries(plugin.errors ?? {}) as [string, PluginErrorSpec][]) {
      if (code in ERRORS) invalid(plugin.name, code, 'core already defines this code (core/errors/errors.ts)')
      const other = table.get(code)
      if (other) invalid(plugin.name, code, `plugin "${other.plugin}" already declares this code`)
      table.set(code, { plugin: plugin.name, spec: specOf(plugin.name, code, e) })
    }
  }
  return table
}

/** `deps.error` for one plugin: only the codes that plugin declared. */
export function errorHelper (plugin: string, table: PluginErrorTable) {
  return function error (code: string, args: readonly unknown[] = [], opts?: GatewayErrorOptions): GatewayError {
    const entry = table.get(code)
    if (!entry || entry.plugin !== plugin) throw new Error(`plugin "${plugin}" declares no error code "${code}"`)
    return pluginError(code, entry.spec, args, opts)
  }
}
