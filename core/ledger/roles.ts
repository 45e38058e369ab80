/**
 * @module ledger/roles – the ledger roles a plugin may declare (`ledger: ['wallet', 'prices']`),
 * each handed to it as a view holding that role's operations and nothing else: a plugin cannot
 * reach administration (keys made, balances topped up, prices set) even by a cast.
 */
import type { KeyBudgets, KeyLookup, Ledger, PriceLookup, UsageReader, Wallet } from './ledger.ts'

/** The roles a plugin may ask for; administration is never one of them. */
export const LEDGER_ROLES = ['wallet', 'keys', 'prices', 'usage'] as const
export type LedgerRole = (typeof LEDGER_ROLES)[number]

/** Each role's interface, by name. */
export interface LedgerRoles {
  wallet: Wallet
  keys: KeyLookup
  prices: PriceLookup
  usage: UsageReader
}

/** What `deps.ledger` holds for a plugin that declared roles `R`. */
export type LedgerRolesOf<R extends LedgerRole> = Pick<LedgerRoles, R>

export function isLedgerRole (name: unknown): name is LedgerRole {
  return (LEDGER_ROLES as readonly unknown[]).includes(name)
}

/** The wallet's operations of `l`, each looked up on `l` when called. */
function walletOf (l: Wallet): Wallet {
  const { leaseHold, shrinkHold } = l
  return Object.freeze({
    ping: () => l.ping(),
    getBalance: (organization: string) => l.getBalance(organization),
    reserve: (...a: Parameters<Wallet['reserve']>) => l.reserve(...a),
    resize: (...a: Parameters<Wallet['resize']>) => l.resize(...a),
    release: (...a: Parameters<Wallet['release']>) => l.release(...a),
    charge: (...a: Parameters<Wallet['charge']>) => l.charge(...a),
    openAccount: (...a: Parameters<Wallet['openAccount']>) => l.openAccount(...a),
    inProcess: l.inProcess,
    ...(l.keyBudgets !== undefined ? { keyBudgets: keyBudgetsOf(l.keyBudgets) } : {}),
    // Lease mode: both or neither.
    ...(leaseHold !== undefined && shrinkHold !== undefined
      ? { leaseHold: leaseHold.bind(l), shrinkHold: shrinkHold.bind(l) }
      : {}),
  })
}

/** Key budgets' four operations, and nothing else of the object behind them. */
function keyBudgetsOf (b: KeyBudgets): KeyBudgets {
  return Object.freeze({
    reserve: (...a: Parameters<KeyBudgets['reserve']>) => b.reserve(...a),
    resize: (...a: Parameters<KeyBudgets['resize']>) => b.resize(...a),
    release: (...a: Parameters<KeyBudgets['release']>) => b.release(...a),
    exhausted: (...a: Parameters<KeyBudgets['exhausted']>) => b.exhausted(...a),
  })
}

const VIEWS: { [R in LedgerRole]: (l: Ledger) => LedgerRoles[R] } = {
  wallet: walletOf,
  keys: l => Object.freeze({
    ping: () => l.ping(),
    findKeyByHash: (hash: string) => l.findKeyByHash(hash),
    ...(l.touchKeys !== undefined ? { touchKeys: (used: ReadonlyMap<string, number>) => l.touchKeys!(used) } : {}),
  }),
  prices: l => Object.freeze({ ping: () => l.ping(), getPrice: (model: string) => l.getPrice(model) }),
  usage: l => Object.freeze({
    ping: () => l.ping(),
    listUsage: (...a: Parameters<UsageReader['listUsage']>) => l.listUsage(...a),
    queryUsage: (...a: Parameters<UsageReader['queryUsage']>) => l.queryUsage(...a),
    summarizeUsage: (...a: Parameters<UsageReader['summarizeUsage']>) => l.summarizeUsage(...a),
  }),
}

/**
 * The views of `ledger` for `roles` (an empty object without a ledger: a plugin built by hand in
 * a test that gave none). Throws on a name that is not a role.
 */
export function ledgerRoles<R extends LedgerRole> (ledger: Ledger | undefined, roles: readonly R[]): LedgerRolesOf<R> {
  const out: Partial<LedgerRoles> = {}
  for (const role of roles) {
    if (!isLedgerRole(role)) throw new Error(`unknown ledger role "${String(role)}" (one of ${LEDGER_ROLES.join(', ')})`)
    if (ledger !== undefined) (out as Record<LedgerRole, unknown>)[role] = VIEWS[role](ledger)
  }
  return Object.freeze(out) as LedgerRolesOf<R>
}
