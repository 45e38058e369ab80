/** @module types/principal – who is calling: set by the auth plugin, read by every later phase. */

export interface Principal {
  /** Stable id of the API key (its hash prefix or ledger id); never the secret. */
  keyId: string
  /** Key display name, when configured. */
  name?: string
  organization?: string
  project?: string
  /** When set, the only model ids the key may use (with those `modelPrefixes` allows). */
  models?: ReadonlySet<string>
  /** With `models`: patterns ending in `*`, as what precedes the `*` (`openai/`; '' for `*`): ids starting with one are allowed too. */
  modelPrefixes?: readonly string[]
  /** A key of the ledger: its spend is counted on it (the balance plugin marks its charges). */
  ledgerKey?: boolean
  /** A ledger key's budgets: a window budget (its window) and whether it has a lifetime budget. The amounts stay in the ledger. */
  budget?: { window?: 'day' | 'month' | number, lifetime: boolean }
  /** Most requests and tokens (input + output) per minute (the key-limits plugin). */
  rpm?: number
  tpm?: number
  tags?: readonly string[]
}

/** Whether the principal may use catalog model `id`: no list, an id on it, or an id a pattern's prefix starts. */
export function modelAllowed (p: Principal | undefined, id: string): boolean {
  if (!p?.models || p.models.has(id)) return true
  const prefixes = p.modelPrefixes
  if (prefixes === undefined) return false
  for (const prefix of prefixes) if (id.startsWith(prefix)) return true
  return false
}

/**
 * The key's identity for per-key state (idempotency claims, per-key quota windows): its
 * organization and its id together, each after its length, so that no two keys share one and
 * anything appended to it stays apart (`3.org.5.key-1`). Ids are
 * unique within a source, not across them: a ledger key and a config key of two organizations may
 * share an id, and must never share a claim or a window.
 */
export function keyScope (p: Principal): string {
  const org = p.organization ?? ''
  return `${org.length}.${org}.${p.keyId.length}.${p.keyId}`
}
