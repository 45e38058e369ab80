/**
 * @module cli/key-flags – a key's settings from the admin CLI's flags (`key create`, `key update`),
 * in the admin API's shape (amounts as strings, times ISO 8601), so the ledger mode and --url send
 * the same thing; `none` clears a setting in an update. Bad values exit 2.
 */
import { DEFAULT_GRACE_SECONDS, keyPatchOf, type KeySettingsInput } from '../admin/key-settings.ts'
import type { KeyPatch } from '../core/ledger/ledger.ts'
import { usageError } from './args.ts'

/** The flags `key create` and `key update` take for settings. */
export const KEY_SETTING_FLAGS = ['name', 'models', 'expires', 'tags', 'budget', 'window', 'lifetime-budget', 'rpm', 'tpm'] as const

const list = (v: string): string[] => v.split(',').map(s => s.trim()).filter(Boolean)

function int (v: string, flag: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1) throw usageError(`--${flag} must be a whole number, at least 1: "${v}"`)
  return Number(v)
}

/** The settings the flags name (`update`: `none` clears one). */
export function keySettingsOf (get: (name: string) => string | undefined, update: boolean): KeySettingsInput {
  const s: KeySettingsInput = {}
  const none = (v: string): boolean => update && v === 'none'
  const name = get('name')
  if (name !== undefined) s.name = none(name) ? null : name
  const models = get('models')
  if (models !== undefined) {
    if (!none(models) && list(models).length === 0) throw usageError('--models needs at least one model id or pattern')
    s.models = none(models) ? null : list(models)
  }
  const expires = get('expires')
  if (expires !== undefined) s.expiresAt = none(expires) ? null : expires
  const tags = get('tags')
  if (tags !== undefined) s.tags = none(tags) ? null : list(tags)
  const budget = get('budget')
  const window = get('window')
  if (window !== undefined && (budget === undefined || none(budget))) throw usageError('--window goes with --budget <amount>')
  if (budget !== undefined) {
    if (none(budget)) s.budget = null
    else {
      const w = window ?? 'month'
      if (!(w === 'day' || w === 'month' || /^\d+$/.test(w))) throw usageError(`--window must be day, month or seconds: "${w}"`)
      s.budget = { amount: budget, window: w === 'day' || w === 'month' ? w : Number(w) }
    }
  }
  const lifetime = get('lifetime-budget')
  if (lifetime !== undefined) s.lifetimeBudget = none(lifetime) ? null : lifetime
  for (const f of ['rpm', 'tpm'] as const) {
    const v = get(f)
    if (v !== undefined) s[f] = none(v) ? null : int(v, f)
  }
  return s
}

/** The ledger's patch of those settings; a bad value (an amount, a time, a pattern) exits 2 naming its flag. */
export function keyPatchOfFlags (s: KeySettingsInput): KeyPatch {
  try {
    return keyPatchOf(s, '')
  } catch (err) {
    const path = String((err as { metadata?: { path?: string } }).metadata?.path ?? '')
    const flag = { '/expiresAt': 'expires', '/lifetimeBudget': 'lifetime-budget', '/budget/amount': 'budget', '/budget/window': 'window' }[path] ?? path.split('/')[1] ?? 'value'
    throw usageError(`--${flag}: ${(err as Error).message.replace(/^.*? (is|must)/, '$1')}`)
  }
}

/** `--grace SECONDS` of `key rotate`: 0 to 30 days (default an hour). */
export function graceArg (v: string | undefined): number {
  if (v === undefined) return DEFAULT_GRACE_SECONDS
  if (!/^\d+$/.test(v) || Number(v) > 2_592_000) throw usageError(`--grace must be whole seconds from 0 to 2592000 (30 days): "${v}"`)
  return Number(v)
}
