/** @module admin/journal-schemas – request and response schemas of the balance journal, verify and audit routes (TypeBox; in the OpenAPI document). */
import { Type, type Static } from '@sinclair/typebox'
import { Amount, Nullable, Time } from './schemas.ts'
import { MAX_REASON } from './balances.ts'

/** A signed amount, not 0 (an adjustment): currency units, at most 6 decimals. */
export const SignedAmount = Type.String({ pattern: '^-?\\d{1,12}(\\.\\d{1,6})?$',
  description: 'Currency units, either sign, at most 6 decimals, e.g. "-2.50"; not 0; the balance it makes at most ±9007199254.740991.' })
/** Why a balance changed, said by the operator: some non-blank text. */
export const Reason = Type.String({ minLength: 1, maxLength: MAX_REASON, pattern: '\\S', description: `Why (shown in the balance's history), 1 to ${MAX_REASON} characters.` })
/** A page cursor of the journal and the audit log: the id of the last row read. */
const IdCursor = Type.String({ pattern: '^[0-9]{1,16}$', description: 'nextCursor of the previous page.' })
const Limit = Type.Integer({ minimum: 1, maximum: 1000, default: 50 })

export const TopUpBody = Type.Object({ amount: Amount, reason: Type.Optional(Reason) }, { additionalProperties: false })
export const AdjustBody = Type.Object({ amount: SignedAmount, reason: Reason }, { additionalProperties: false })
export const RefundBody = Type.Object({
  amount: Amount,
  reason: Reason,
  traceId: Type.Optional(Type.String({ minLength: 1, maxLength: 200,
    description: 'The refunded call\'s trace id (X-GW-Trace-ID): all its refunds together are at most what it was charged.' })),
}, { additionalProperties: false })

export const JournalEntry = Type.Object({
  id: Type.Integer(),
  organization: Type.String(),
  kind: Type.Union(['topup', 'adjustment', 'refund', 'opening', 'migration', 'carry'].map(k => Type.Literal(k)),
    { description: 'topup, adjustment, refund; opening: seeded from config; migration: the balance and charges when the journal began; ' +
      'carry: charges recorded under the id before the organization existed.' }),
  amount: Type.String({ description: 'Signed currency units.' }),
  balance: Type.String({ description: 'The balance this change left.' }),
  actor: Type.String({ description: 'admin:<admin key id>, cli:<OS user>, config, ledger or migration.' }),
  reason: Nullable(Type.String()),
  traceId: Nullable(Type.String()),
  time: Type.String(),
})
export const Posted = Type.Object({ organization: Type.String(), balance: Type.String({ description: 'The balance after.' }), entry: JournalEntry })
export const JournalQuery = Type.Object({ limit: Limit, cursor: Type.Optional(IdCursor) }, { additionalProperties: false })
export const JournalPage = Type.Object({ data: Type.Array(JournalEntry), nextCursor: Nullable(Type.String({ description: 'null on the last page.' })) })

export const Difference = Type.Object({
  organization: Type.String(), balance: Type.String(), journal: Type.String({ description: 'Σ journal amounts.' }), charges: Type.String({ description: 'Σ usage-record costs.' }),
  difference: Type.String({ description: 'balance − (journal − charges).' }),
})
export const Verified = Type.Object({
  ok: Type.Boolean({ description: 'Every organization\'s balance = Σ journal − Σ charges, to the micro-unit.' }),
  organizations: Type.Integer({ description: 'Organizations checked.' }),
  differences: Type.Array(Difference),
})

export const AuditQuery = Type.Object({
  actor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  action: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  target: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
  from: Type.Optional(Time),
  to: Type.Optional(Time),
  limit: Limit,
  cursor: Type.Optional(IdCursor),
}, { additionalProperties: false })
export const AuditEntry = Type.Object({
  id: Type.Integer(),
  time: Type.String(),
  actor: Type.String({ description: 'admin:<admin key id> (admin API) or cli:<OS user> (admin CLI on the ledger).' }),
  action: Type.String({ description: 'e.g. organization.create, key.revoke, price.set, balance.adjust, circuit.reset.' }),
  target: Type.String({ description: 'The id of the record written.' }),
  before: Type.Unknown({ description: 'The record before (as the ledger stores it: micro-units, ms); null when there was none or the write was refused.' }),
  after: Type.Unknown({ description: 'The record after; null when it is gone or the write was refused.' }),
  result: Type.String({ description: 'ok, or the refusal\'s error code.' }),
  status: Nullable(Type.Integer({ description: 'A refusal\'s HTTP status.' })),
})
export const AuditPage = Type.Object({ data: Type.Array(AuditEntry), nextCursor: Nullable(Type.String()) })

export type AuditQueryT = Static<typeof AuditQuery>
