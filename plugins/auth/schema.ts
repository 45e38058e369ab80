/** @module plugins/auth/schema – config of the auth plugin. */
import { Type, type Static } from '../../index.ts'

export const KeyEntry = Type.Object({
  key: Type.Optional(Type.String({ pattern: '^sk-gw-.+', description: 'The key in plain (use ${ENV} to keep it out of the file); held only as its hash.' })),
  hash: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$', description: 'sha256 hex of the key, instead of `key`.' })),
  id: Type.Optional(Type.String({ description: 'Stable key id for usage records; default: the first 12 hex digits of the hash.' })),
  name: Type.Optional(Type.String({ description: 'Display name.' })),
  organization: Type.Optional(Type.String({ description: 'Organization the key bills to (balance and quota).' })),
  project: Type.Optional(Type.String({ description: 'Project within the organization (quota).' })),
  models: Type.Optional(Type.Array(Type.String(), { description: 'When set, the only model ids this key may use.', uniqueItems: true })),
}, { additionalProperties: false })

export const AuthConfig = Type.Object({
  keys: Type.Array(KeyEntry, { default: [], description: 'Keys accepted from config.' }),
  ledger: Type.Boolean({ default: true, description: 'Also accept keys created in the ledger (admin CLI).' }),
  ledgerCacheMs: Type.Integer({ minimum: 0, default: 5000, description: 'How long a ledger lookup (hit or miss) is cached; a revoked key stops working within this time.' }),
  acceptXApiKey: Type.Boolean({ default: true, description: 'Also read the key from `x-api-key` (Anthropic clients send it).' }),
}, { additionalProperties: false })

export type AuthConfigT = Static<typeof AuthConfig>
export type KeyEntryT = Static<typeof KeyEntry>
