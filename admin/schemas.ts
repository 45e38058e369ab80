/** @module admin/schemas – request and response schemas of the admin HTTP API (TypeBox; the OpenAPI document is generated from them). */
import { Type, type Static, type TSchema } from '@sinclair/typebox'

export const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()])

/** Ids an operator chooses: what the CLI accepts for key ids, for every id. */
export const Id = Type.String({ pattern: '^[\\w.:@-]{1,128}$', description: 'Letters, digits and _ . : @ - (1 to 128).' })
/** A positive amount in currency units, at most 6 decimals (exact in micro-units). */
export const Amount = Type.String({ pattern: '^\\d{1,12}(\\.\\d{1,6})?$',
  description: 'Currency units, at most 6 decimals, e.g. "12.50"; at most 9007199254.740991 (2^53 − 1 micro-units, the largest exact amount), and the balance it makes likewise.' })
/** A price per million tokens (non-negative). */
const Rate = Type.Number({ minimum: 0, maximum: 1e9, description: 'Currency units per million tokens, at most 6 decimals.' })
/** ISO 8601 date or date-time. */
export const Time = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}', description: 'ISO 8601 date or time, e.g. 2025-01-31 or 2025-01-31T12:00:00Z.' })

export const ErrorBody = Type.Object({
  error: Type.Object({
    code: Type.Integer({ description: 'The HTTP status.' }),
    message: Type.String(),
    metadata: Type.Optional(Type.Object({ path: Type.Optional(Type.String({ description: 'The bad field, e.g. /body/amount.' })) }, { additionalProperties: true })),
  }),
}, { $id: 'AdminError', description: 'The gateway\'s error body.' })

export const Organization = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  balance: Type.String({ description: 'Currency units.' }),
  createdAt: Type.String(),
})

export const OrganizationDetail = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  balance: Type.String(),
  reserved: Type.String({ description: 'Held by calls in flight.' }),
  available: Type.String({ description: 'balance − reserved.' }),
  createdAt: Type.String(),
})

export const Balance = Type.Object({
  organization: Type.String(),
  balance: Type.String(),
  reserved: Type.String(),
  available: Type.String(),
})

export const CreateOrganization = Type.Object({ id: Id, name: Type.Optional(Type.String({ maxLength: 200 })) }, { additionalProperties: false })

export const Project = Type.Object({ id: Type.String(), organization: Type.String(), name: Nullable(Type.String()), createdAt: Type.String() })
export const CreateProject = Type.Object({ id: Id, organization: Id, name: Type.Optional(Type.String({ maxLength: 200 })) }, { additionalProperties: false })
export const ProjectQuery = Type.Object({ organization: Type.Optional(Id) }, { additionalProperties: false })

/** A model id, or a pattern with one `*` at its end (`openai/*`; `*`: every model). */
export const ModelPattern = Type.String({ minLength: 1, maxLength: 200, pattern: '^(\\*|[^*\\s]+\\*?)$', description: 'A model id, or a pattern ending in * (openai/*; * alone: every model).' })
export const Tag = Type.String({ minLength: 1, maxLength: 64, pattern: '^[\\w.:@/-]+$', description: 'Letters, digits and _ . : @ / - (1 to 64).' })
/** A budget window: a UTC day, a UTC calendar month, or a number of seconds (60 s to 366 days). */
export const BudgetWindow = Type.Union([Type.Literal('day'), Type.Literal('month'), Type.Integer({ minimum: 60, maximum: 31_622_400 })],
  { description: 'day (UTC), month (UTC calendar month) or seconds (60 to 31622400; windows counted from the epoch).' })
export const KeyBudget = Type.Object({ amount: Amount, window: BudgetWindow }, { additionalProperties: false })
const Limit = Type.Integer({ minimum: 1, maximum: 1_000_000_000 })
const ISO_TIME = '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})?)?$'
/** A key's settings, each optional (create) or nullable too (update: null clears it). */
const keySettings = (nullable: boolean) => {
  const f = <T extends TSchema>(s: T) => Type.Optional(nullable ? Nullable(s) : s)
  return {
    name: f(Type.String({ maxLength: 200 })),
    models: f(Type.Array(ModelPattern, { minItems: 1, maxItems: 1000, uniqueItems: true, description: 'The only models the key may use (deny by default once given).' })),
    expiresAt: f(Type.String({ pattern: ISO_TIME, description: 'ISO 8601; from then on the key is refused as unknown (401).' })),
    tags: f(Type.Array(Tag, { maxItems: 20, uniqueItems: true })),
    budget: f(KeyBudget),
    lifetimeBudget: f(Amount),
    rpm: f(Limit),
    tpm: f(Limit),
  }
}

export const Key = Type.Object({
  id: Type.String(),
  prefix: Type.String({ description: 'The first characters of the secret.' }),
  name: Nullable(Type.String()),
  organization: Nullable(Type.String()),
  project: Nullable(Type.String()),
  models: Nullable(Type.Array(Type.String())),
  createdAt: Type.String(),
  revokedAt: Nullable(Type.String()),
  expiresAt: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  budget: Nullable(Type.Object({
    amount: Type.String(), window: Type.Union([Type.String(), Type.Integer()]),
    spent: Type.String({ description: 'Charged in the current window.' }), windowStart: Type.String(), resetsAt: Type.String(),
  })),
  lifetimeBudget: Nullable(Type.String()),
  spent: Type.String({ description: 'Charged over the key\'s life (since the ledger counts it).' }),
  rpm: Nullable(Type.Integer()),
  tpm: Nullable(Type.Integer()),
  lastUsedAt: Nullable(Type.String({ description: 'Written in batches: up to the auth plugin\'s lastUsedFlushMs behind.' })),
  rotatedAt: Nullable(Type.String()),
  previousValidUntil: Nullable(Type.String({ description: 'The secret before the last rotation works until then.' })),
})
export const CreatedKey = Type.Intersect([Key, Type.Object({ secret: Type.String({ description: 'Shown only in this answer; the ledger keeps its sha256.' }) })])
export const CreateKey = Type.Object({
  organization: Id,
  project: Type.Optional(Id),
  id: Type.Optional(Id),
  ...keySettings(false),
}, { additionalProperties: false })
export const UpdateKey = Type.Object(keySettings(true), { additionalProperties: false, minProperties: 1 })
export const RotateKey = Type.Object({
  graceSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_592_000, default: 3600, description: 'How long the old secret keeps working (0: not at all; at most 30 days).' })),
}, { additionalProperties: false })
export type UpdateKeyT = Static<typeof UpdateKey>
export type RotateKeyT = Static<typeof RotateKey>
export const IdParam = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) })

export const Price = Type.Object({ input: Rate, cachedInput: Type.Optional(Rate), cacheWrite: Type.Optional(Rate), cacheWrite1h: Type.Optional(Rate), output: Rate }, { additionalProperties: false })
export const PriceRow = Type.Object({
  model: Type.String(),
  inCatalog: Type.Boolean({ description: 'false: a ledger price for a model the config does not list.' }),
  source: Type.Union([Type.Literal('ledger'), Type.Literal('config'), Type.Literal('none')], { description: 'Which price applies: the ledger\'s over the config\'s; none: the model is free.' }),
  price: Price,
  configPrice: Nullable(Price),
  ledgerPrice: Nullable(Price),
})
export const SetPrice = Type.Object({
  model: Type.String({ minLength: 1, maxLength: 200 }), input: Rate, cachedInput: Type.Optional(Rate), cacheWrite: Type.Optional(Rate), cacheWrite1h: Type.Optional(Rate), output: Rate,
}, { additionalProperties: false })

export const UsageFilter = {
  from: Type.Optional(Time),
  to: Type.Optional(Time),
  organization: Type.Optional(Type.String({ minLength: 1 })),
  project: Type.Optional(Type.String({ minLength: 1 })),
  key: Type.Optional(Type.String({ minLength: 1, description: 'Key id.' })),
  model: Type.Optional(Type.String({ minLength: 1 })),
}
export const UsageQuery = Type.Object({
  ...UsageFilter,
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
  order: Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'asc', description: 'asc: oldest first; desc: newest first (a cursor continues in the order it was read in).' }),
  cursor: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,200}$', description: 'nextCursor of the previous page.' })),
}, { additionalProperties: false })
export const UsageExportQuery = Type.Object({
  ...UsageFilter,
  format: Type.Union([Type.Literal('csv'), Type.Literal('json')], { default: 'csv' }),
}, { additionalProperties: false })
export const UsageRecord = Type.Object({
  time: Type.String(),
  keyId: Type.String(),
  organization: Nullable(Type.String()),
  project: Nullable(Type.String()),
  model: Type.String(),
  provider: Type.String(),
  traceId: Type.String(),
  idempotencyKey: Nullable(Type.String()),
  inputTokens: Type.Integer(),
  cachedInputTokens: Type.Integer(),
  outputTokens: Type.Integer(),
  cost: Type.String(),
  cacheWriteTokens: Nullable(Type.Integer({ description: 'Input tokens written to the prompt cache (part of inputTokens); null on records from before they were kept.' })),
  cacheWrite1hTokens: Nullable(Type.Integer({ description: 'The part of cacheWriteTokens written to a one-hour cache.' })),
  price: Nullable(Price),
  estimated: Type.Boolean(),
})
export const UsagePage = Type.Object({ data: Type.Array(UsageRecord), nextCursor: Nullable(Type.String({ description: 'null on the last page.' })) })

const HoldKind = Type.Union([Type.Literal('organization'), Type.Literal('key')],
  { description: 'organization: a hold on the organization\'s balance; key: a hold on a ledger key\'s budget (a call on a key with a budget holds both).' })
export const Hold = Type.Object({
  id: Type.String(), organization: Type.String({ description: 'A key hold: its key\'s organization (empty when the key has none).' }), amount: Type.String(),
  state: Type.Union([Type.Literal('live'), Type.Literal('expired')]), createdAt: Type.String(), expiresAt: Type.String(), owner: Nullable(Type.String()), traceId: Nullable(Type.String()),
  kind: HoldKind, keyId: Nullable(Type.String({ description: 'A key hold\'s key; null on a balance hold.' })),
})
export const HoldList = Type.Object({
  stored: Type.Boolean({ description: 'false on a SQLite ledger: holds live in the gateway process, none are listed.' }),
  data: Type.Array(Hold),
})
export const HoldQuery = Type.Object({
  organization: Type.Optional(Type.String({ minLength: 1, description: 'Holds of this organization: its balance holds and its keys\' budget holds.' })),
  key: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The budget holds of this ledger key.' })),
  kind: Type.Optional(HoldKind),
}, { additionalProperties: false })

export const Circuit = Type.Object({
  key: Type.String({ description: 'provider/upstreamModel' }),
  provider: Type.String(),
  upstreamModel: Type.String(),
  models: Type.Array(Type.String()),
  state: Type.Union([Type.Literal('closed'), Type.Literal('open'), Type.Literal('half-open')]),
  failures: Type.Integer(),
  openedAt: Nullable(Type.String()),
})
export const CircuitReset = Type.Object({ key: Type.String({ minLength: 1, description: 'provider/upstreamModel' }) }, { additionalProperties: false })

export const ConfigView = Type.Object({
  version: Type.String({ description: 'The gateway package version.' }),
  configVersion: Type.String({ description: 'The config version serving: the first 12 hex digits of the SHA-256 of its settings (changes with each reload that changes them).' }),
  loadedAt: Type.String({ format: 'date-time', description: 'When the config version serving was loaded (start-up or reload).' }),
  node: Type.String(),
  source: Type.String(),
  config: Type.Object({}, { additionalProperties: true, description: 'The running config, secrets masked.' }),
})

export const ListOf = <T extends TSchema>(s: T) => Type.Object({ data: Type.Array(s) })

export type CreateKeyT = Static<typeof CreateKey>
export type UsageQueryT = Static<typeof UsageQuery>
export type UsageExportQueryT = Static<typeof UsageExportQuery>
export const Released = Type.Object({ released: Type.String({ description: 'The hold\'s id.' }), kind: HoldKind })
