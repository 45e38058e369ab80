/**
 * @module ledger/postgres-charge – the PostgreSQL charge statement: a whole batch of charges (usage
 * records, debits, holds dropped, ledger keys' spend) in one statement.
 */
import type { ChargeItem } from './batch.ts'
import { USAGE_COLUMNS, usageParams } from './rows.ts'

/** PostgreSQL types of USAGE_COLUMNS, in order (the arrays the batch insert unnests). */
const USAGE_TYPES = [
  'bigint', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'bigint', 'bigint', 'bigint', 'bigint', 'float8', 'float8', 'float8', 'integer', 'float8', 'float8', 'bigint', 'bigint',
]
if (USAGE_TYPES.length !== USAGE_COLUMNS.split(',').length) throw new Error('ledger/postgres: USAGE_TYPES does not match USAGE_COLUMNS')

/**
 * A whole batch of charges in ONE statement, so one implicit transaction and one commit.
 * $1–$3 hold one element per charge: the id of the call's hold (NULL without one), and the
 * organization and amount to debit (NULL when the record has no organization or costs nothing).
 * The holds are deleted and, per organization, balance = balance − Σ debits. The organizations'
 * rows are locked in id order first (`locked` is materialized and read in order by the update),
 * so two replicas' batches touching the same organizations never deadlock; reserve takes the same
 * row lock, so it sees a debit and the deletion of its hold together or neither. $4… are the usage
 * columns, one array each, inserted as one multi-row insert. Any failure (say a NOT NULL record
 * column) fails the statement, and nothing of the batch is written. A record whose trace id is
 * already there (the same charge written before: a retry after a connection lost mid-commit) is
 * skipped with its debit, so writing a charge twice charges it once.
 *
 * Ledger keys (records with `keySpend`): the four arrays after the usage columns hold the key id,
 * the budget window start, the cost and the key hold's id. Per key the costs add to `spent`, and
 * those of the key's latest window in the batch to that window's spend (as SQLITE_KEY_SPEND in
 * key-budget.ts); the keys' rows are locked in id order after the organizations' (gw_key_reserve
 * locks one key row and nothing else, so nothing waits in the other order); key holds are deleted.
 */
const TRACE_PARAM = USAGE_COLUMNS.split(',').map(c => c.trim()).indexOf('trace_id') + 4
const KEY_PARAM = USAGE_TYPES.length + 4
export const CHARGE_SQL = `WITH recorded AS (
  INSERT INTO usage_records (${USAGE_COLUMNS})
  SELECT * FROM unnest(${USAGE_TYPES.map((type, i) => `$${i + 4}::${type}[]`).join(', ')})
  ON CONFLICT (trace_id) DO NOTHING
  RETURNING trace_id
), item AS (
  SELECT DISTINCT ON (i.trace) i.* FROM unnest($1::text[], $2::text[], $3::bigint[], $${TRACE_PARAM}::text[], $${KEY_PARAM}::text[], $${KEY_PARAM + 1}::bigint[], $${KEY_PARAM + 2}::bigint[],
    $${KEY_PARAM + 3}::text[]) WITH ORDINALITY AS i (hold_id, debit_org, debit, trace, key_id, ws, key_cost, key_hold, n)
  WHERE i.trace IN (SELECT trace_id FROM recorded) ORDER BY i.trace, i.n
), key_top AS (
  SELECT key_id, max(ws) AS ws FROM item WHERE key_id IS NOT NULL GROUP BY key_id
), key_delta AS (
  SELECT t.key_id, t.ws, sum(i.key_cost)::bigint AS cost, coalesce(sum(i.key_cost) FILTER (WHERE i.ws = t.ws), 0)::bigint AS wcost
  FROM key_top t JOIN item i ON i.key_id = t.key_id GROUP BY t.key_id, t.ws
), key_released AS (
  DELETE FROM key_holds WHERE id IN (SELECT key_hold FROM item WHERE key_hold IS NOT NULL)
  RETURNING id
), released AS (
  DELETE FROM holds WHERE id IN (SELECT hold_id FROM item WHERE hold_id IS NOT NULL)
  RETURNING id
), delta AS (
  SELECT debit_org AS org, sum(debit)::bigint AS debit FROM item WHERE debit_org IS NOT NULL GROUP BY debit_org
), locked AS MATERIALIZED (
  SELECT o.id, delta.debit FROM organizations o JOIN delta ON delta.org = o.id ORDER BY o.id FOR UPDATE OF o
), moved AS (
  UPDATE organizations o SET balance = o.balance - locked.debit
  FROM locked WHERE o.id = locked.id
  RETURNING o.id
), key_locked AS MATERIALIZED (
  SELECT a.id, d.ws, d.cost, d.wcost FROM api_keys a JOIN key_delta d ON d.key_id = a.id WHERE (SELECT count(*) FROM moved) >= 0 ORDER BY a.id FOR UPDATE OF a
), key_moved AS (
  UPDATE api_keys a SET spent = a.spent + k.cost,
    window_spent = CASE WHEN k.ws IS NULL THEN a.window_spent WHEN a.window_start = k.ws THEN a.window_spent + k.wcost WHEN a.window_start IS NULL OR a.window_start < k.ws THEN k.wcost
      ELSE a.window_spent END,
    window_start = CASE WHEN k.ws IS NULL THEN a.window_start WHEN a.window_start IS NULL OR a.window_start < k.ws THEN k.ws ELSE a.window_start END
  FROM key_locked k WHERE a.id = k.id
  RETURNING a.id
)
SELECT (SELECT count(*) FROM key_moved) AS keys, (SELECT count(*) FROM key_released) AS key_holds,
  (SELECT count(*) FROM moved) AS organizations, (SELECT count(*) FROM recorded) AS records, (SELECT count(*) FROM released) AS released`

/** The statement's parameters for a batch: the money arrays, then one array per usage column. */
export function chargeParams (items: readonly ChargeItem[]): unknown[] {
  const n = items.length
  const holdId = new Array<string | null>(n)
  const debitOrg = new Array<string | null>(n)
  const debit = new Array<number | null>(n)
  const columns = USAGE_TYPES.map(() => new Array<unknown>(n))
  const keys = [0, 1, 2, 3].map(() => new Array<unknown>(n).fill(null))
  for (let i = 0; i < n; i++) {
    const { reservation, record } = items[i]
    holdId[i] = reservation ? reservation.id : null
    const debits = Boolean(record.organization) && record.cost > 0
    debitOrg[i] = debits ? record.organization! : null
    debit[i] = debits ? record.cost : null
    const params = usageParams(record)
    for (let c = 0; c < columns.length; c++) columns[c][i] = params[c] ?? null
    const spend = record.keySpend
    if (spend) [keys[0][i], keys[1][i], keys[2][i], keys[3][i]] = [record.keyId, spend.windowStart ?? null, record.cost, spend.hold?.id ?? null]
  }
  return [holdId, debitOrg, debit, ...columns, ...keys]
}

