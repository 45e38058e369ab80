/** @module plugins/balance/solvent – count_tokens: refused when the organization has nothing available. */
import type { Logger } from 'pino'
import { gwError, type Wallet } from '../../index.ts'
import type { BalanceMode } from './mode.ts'

/**
 * count_tokens: 402 when the organization has nothing available. Read only: a count holds
 * and costs nothing, so two counts never race for money.
 */
export async function solvent (mode: BalanceMode, wallet: Wallet, log: Logger, org: string): Promise<void> {
  if (mode.hasFree(org)) return
  let b: { balance: number, reserved: number } | undefined
  try {
    b = await wallet.getBalance(org)
  } catch (err) {
    log.error({ err }, 'balance: ledger unreachable (balance)')
    throw gwError('GW_ERR_NOT_READY', [], { cause: err })
  }
  if (b === undefined || b.balance - b.reserved <= 0) throw gwError('GW_ERR_BALANCE_INSUFFICIENT')
}
