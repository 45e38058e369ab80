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
