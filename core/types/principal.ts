/** @module types/principal – who is calling: set by the auth plugin, read by every later phase. */

export interface Principal {
  /** Stable id of the API key (its hash prefix or ledger id); never the secret. */
  keyId: string
  /** Key display name, when configured. */
  name?: string
  organization?: string
  project?: string
  /** When set, the only model ids the key may use. */
  models?: ReadonlySet<string>
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
