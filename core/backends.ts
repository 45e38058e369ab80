/** @module backends – opens the configured key-value store and ledger (memory/Redis, SQLite/PostgreSQL). */
import type { GatewayConfig } from './config-schema.ts'
import type { KvStore } from './stores/kv.ts'
import type { Ledger } from './ledger/ledger.ts'

/** Opens the configured store and ledger; the ledger's migrations run here, before listen(). */
export async function openBackends (config: GatewayConfig): Promise<{ store: KvStore, ledger: Ledger }> {
  const { openStore } = await import('./stores/index.ts')
  const { openLedger } = await import('./ledger/index.ts')
  const store = await openStore(config.stores.kv)
  try {
    const ledger = await openLedger(config.stores.ledger)
    await ledger.migrate()
    return { store, ledger }
  } catch (err) {
    await store.close()
    throw err
  }
}
