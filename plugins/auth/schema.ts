/** @module plugins/auth/schema – config of the auth plugin. */
import { Type, type Static } from '../../index.ts'

/** A model id, or a pattern: one `*`, at the end (`openai/*`, `*`). */
export const MODEL_PATTERN = '^(\\*|[^*\\s]+\\*?)$'
export const ModelPattern = Type.String({ minLength: 1, maxLength: 200, pattern: MODEL_PATTERN })
/** A date, or a date and time (ISO 8601; without a zone: UTC). */
export const ISO_TIME = '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})?)?$'
/** A tag: a short label. */
export const Tag = Type.String({ minLength: 1, maxLength: 64, pattern: '^[\\w.:@/-]+$' })

export const KeyEntry = Type.Object({
  key: Type.Optional(Type.String({ pattern: '^sk-gw-.+', description: 'The key in plain (use ${ENV} to keep it out of the file); held only as its hash.' })),
  hash: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$', description: 'sha256 hex of the key, instead of `key`.' })),
  id: Type.Optional(Type.String({ description: 'Stable key id for usage records; default: the first 12 hex digits of the hash.' })),
  name: Type.Optional(Type.String({ description: 'Display name.' })),
  organization: Type.Optional(Type.String({ description: 'Organization the key bills to (balance and quota).' })),
  project: Type.Optional(Type.String({ description: 'Project within the organization (quota).' })),
  models: Type.Optional(Type.Array(ModelPattern, { description: 'When set, the only models this key may use: ids, or patterns ending in `*` (`openai/*`; `*`: every model).', uniqueItems: true })),
  expiresAt: Type.Optional(Type.String({ pattern: ISO_TIME, description: 'From this time (ISO 8601) the key is refused like an unknown key (401).' })),
  tags: Type.Optional(Type.Array(Tag, { maxItems: 20, uniqueItems: true, description: 'Labels shown with the key.' })),
  rpm: Type.Optional(Type.Integer({ minimum: 1, description: 'Most requests per minute (the key-limits plugin).' })),
  tpm: Type.Optional(Type.Integer({ minimum: 1, description: 'Most tokens (input + output) per minute (the key-limits plugin).' })),
}, { additionalProperties: false })

export const AuthConfig = Type.Object({
  keys: Type.Array(KeyEntry, { default: [], description: 'Keys accepted from config.' }),
  ledger: Type.Boolean({ default: true, description: 'Also accept keys created in the ledger (admin CLI).' }),
  ledgerCacheMs: Type.Integer({ minimum: 0, default: 5000, description: 'How long a ledger lookup (hit or miss) is cached; a revoked key stops working within this time.' }),
  acceptXApiKey: Type.Boolean({ default: true, description: 'Also read the key from `x-api-key` (Anthropic clients send it).' }),
  lastUsedFlushMs: Type.Optional(Type.Integer({ minimum: 0, default: 10000,
    description: 'Ledger keys\' last-used times are kept in memory and written in one statement this often (0: not recorded).' })),
}, { additionalProperties: false })

export type AuthConfigT = Static<typeof AuthConfig>
export type KeyEntryT = Static<typeof KeyEntry>
