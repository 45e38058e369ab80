/**
 * @module ledger/key-budget – ledger keys' budget windows, the rule a key hold is checked by, the
 * SQLite key spend statement, and the in-process key holds of the SQLite ledger.
 */
import { randomBytes } from 'node:crypto'
import type { KeyBudgets, KeyRefusal } from './ledger.ts'
import type { BudgetWindow, KeyHold, Micros } from './records.ts'

const DAY_MS = 86_400_000

/** Start of the budget window holding `now` (ms): a UTC day, a UTC calendar month, or `window` seconds counted from the epoch. */
export function windowStart (window: BudgetWindow, now: number): number {
  if (window === 'month') {
    const d = new Date(now)
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
  }
  const len = window === 'day' ? DAY_MS : window * 1000
  return Math.floor(now / len) * len
}

/** End of the budget window holding `now` (ms): when a window budget spent in full is whole again. */
export function windowEnd (window: BudgetWindow, now: number): number {
  if (window === 'month') {
    const d = new Date(now)
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
  }
  return windowStart(window, now) + (window === 'day' ? DAY_MS : window * 1000)
}

/** What a key hold is checked against: the key row's spend and budgets (micro-units). */
export interface KeySpendRow {
  spent: number
  window_start: number | null
  window_spent: number
  budget_amount: number | null
  lifetime_budget: number | null
}

/**
 * The rule (gw_key_reserve's on PostgreSQL): spent + live holds + amount within the lifetime
 * budget (else `lifetime`), and the window's spend + live holds + amount within the window budget
 * (else `window`); a window the row has not reached yet has spent nothing. Every live hold counts
 * against both, wherever its call started: never more admitted than the budget allows.
 */
export function keyRefusal (row: KeySpendRow, held: Micros, amount: Micros, ws: number | undefined): KeyRefusal | undefined {
  if (row.lifetime_budget !== null && row.spent + held + amount > row.lifetime_budget) return 'lifetime'
  const inWindow = row.window_start === null || ws === undefined || row.window_start < ws ? 0 : row.window_spent
  if (row.budget_amount !== null && ws !== undefined && inWindow + held + amount > row.budget_amount) return 'window'
  return undefined
}

/**
 * A charge's spend on its key (SQLite; the PostgreSQL charge statement does the same): the cost
 * adds to the lifetime spend, and to the window starting at @ws (a later window restarts the
 * window's count; a charge of a window already past counts in the lifetime only).
 */
export const SQLITE_KEY_SPEND = `UPDATE api_keys SET spent = spent + @cost,
  window_spent = CASE WHEN @ws IS NULL THEN window_spent WHEN window_start = @ws THEN window_spent + @cost WHEN window_start IS NULL OR window_start < @ws THEN @cost ELSE window_spent END,
  window_start = CASE WHEN @ws IS NULL THEN window_start WHEN window_start IS NULL OR window_start < @ws THEN @ws ELSE window_start END
  WHERE id = @id`

const HOLD_PREFIX = `khold-${randomBytes(9).toString('base64url')}-`
let holds = 0

/**
 * The SQLite ledger's key holds: in this process, next to the key row read from the file (one
 * prepared read per hold, no write), checked and taken with no await in between, so nothing
 * interleaves. A charge drops its hold once it committed (`dropped`).
 */
export class MemoryKeyBudgets implements KeyBudgets {
  readonly #held = new Map<string, number>()
  readonly #read: (keyId: string) => KeySpendRow | undefined

  constructor (read: (keyId: string) => KeySpendRow | undefined) {
    this.#read = read
  }

  reserveNow (keyId: string, amount: Micros, ws: number | undefined): KeyHold | KeyRefusal {
    const row = this.#read(keyId)
    if (row === undefined) return 'unknown'
    const held = this.#held.get(keyId) ?? 0
    const refusal = keyRefusal(row, held, amount, ws)
    if (refusal !== undefined) return refusal
    this.#held.set(keyId, held + amount)
    return { id: HOLD_PREFIX + (holds++).toString(36), keyId, amount }
  }

  /** Takes a hold's amount back (its call settled or was dropped). */
  dropped (hold: KeyHold): void {
    const left = (this.#held.get(hold.keyId) ?? 0) - hold.amount
    if (left > 0) this.#held.set(hold.keyId, left)
    else this.#held.delete(hold.keyId)
  }

  async reserve (keyId: string, amount: Micros, ws: number | undefined): Promise<KeyHold | KeyRefusal> {
    return this.reserveNow(keyId, amount, ws)
  }

  async resize (hold: KeyHold, amount: Micros): Promise<KeyHold> {
    this.#held.set(hold.keyId, (this.#held.get(hold.keyId) ?? 0) + amount - hold.amount)
    return { ...hold, amount }
  }

  async release (hold: KeyHold): Promise<void> {
    this.dropped(hold)
  }

  async exhausted (keyId: string, ws: number | undefined): Promise<KeyRefusal | undefined> {
    const row = this.#read(keyId)
    // Nothing left: not even the smallest amount fits.
    return row === undefined ? undefined : keyRefusal(row, this.#held.get(keyId) ?? 0, 1, ws)
  }
}
