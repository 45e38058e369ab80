/** @module backends – opens the configured key-value stores and ledger (memory/Redis, SQLite/PostgreSQL). */
import type { GatewayConfig } from '../config/config-schema.ts'
import type { StoreSet } from '../stores/kv.ts'
import type { Ledger } from '../ledger/ledger.ts'

/**
 * Opens what is not given: the stores, and the ledger, whose migrations run here, before listen().
 * What this call opened it also closes when a later step fails.
 */
export async function openBackends (config: GatewayConfig, given: { stores?: StoreSet, ledger?: Ledger } = {}, now?: () => number): Promise<{ stores: StoreSet, ledger: Ledger }> {
  const { openStores } = await import('../stores/index.ts')
  const { openLedger } = await import('../ledger/index.ts')
  const stores = given.stores ?? await openStores(config.stores.kv, { now })
  if (given.ledger) return { stores, ledger: given.ledger }
  try {
    const ledger = await openLedger(config.stores.ledger)
    await ledger.migrate()
    return { stores, ledger }
  } catch (err) {
    if (!given.stores) await stores.close()
    throw err
  }
}
