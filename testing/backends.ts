/**
 * @module testing/backends – the gateway's own embedded backends for unit tests of plugins that need
 * `deps.store` or `deps.ledger`: a memory key-value store of a given purpose and a migrated
 * in-memory SQLite ledger. Hand them to `pluginDeps(plugin, { store, ledger })`. And `runPrepared`,
 * a plugin's prepared store work run as the pipeline runs it.
 */
import type { KvStore, StorePurpose } from '../core/stores/kv.ts'
import type { PreparedWork, StepsOutcome } from '../core/pipeline/prepared.ts'
import { memoryStores } from '../core/stores/index.ts'
import type { Ledger } from '../core/ledger/ledger.ts'
import { openLedger } from '../core/ledger/index.ts'

export interface MemoryStoreOptions {
  /** Keys the store holds (counters: least recently used evicted; windows and claims: new keys refused when full). Default 10,000. */
  maxKeys?: number
  /** The store's clock for expiry (default Date.now): move it to expire keys without sleeping. */
  now?: () => number
}

/**
 * The memory store a running gateway gives a plugin whose definition says `storePurpose: purpose`
 * (`counters` by default), namespaced by nothing.
 */
export function memoryStore (purpose: StorePurpose = 'counters', opts: MemoryStoreOptions = {}): KvStore {
  const max = opts.maxKeys ?? 10_000
  return memoryStores({ maxKeys: max, maxWindows: max, maxClaims: max }, opts.now).stores[purpose]
}

/** A fresh SQLite ledger in memory, migrated; close it when done. */
export async function memoryLedger (opts: { now?: () => number } = {}): Promise<Ledger> {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' }, opts)
  await ledger.migrate()
  return ledger
}

/**
 * Runs a plugin's prepared work (`prepare` or `prepareSettle`) as the pipeline would with no other
 * plugin in its batch: its steps as one batch on its store, then its `done` (which throws the
 * plugin's refusal). New work `done` returns for a refused step runs the same way, at most twice,
 * as the pipeline runs it. Returns the outcome the last `done` got; undefined when there was no work.
 */
export function runPrepared (work: PreparedWork | undefined | void): Promise<StepsOutcome | undefined> {
  return runWork(work, 0)
}

async function runWork (work: PreparedWork | undefined | void, retries: number): Promise<StepsOutcome | undefined> {
  if (!work) return undefined
  const steps = work.steps ?? []
  let outcome: StepsOutcome = { results: [], refused: undefined, error: undefined }
  if (steps.length > 0) {
    const runner = work.store?.steps
    if (runner === undefined) throw new TypeError('prepared store steps need a store with steps (deps.store)')
    try {
      const r = await runner.run(steps.map(s => ({ ...s, key: runner.keyOf(s.key) })))
      outcome = { results: r.results, refused: r.refused, error: undefined }
    } catch (err) {
      outcome = { results: [], refused: undefined, error: err }
    }
  }
  const again = await work.done?.(outcome)
  // New work from a refused step's plugin runs again, as the pipeline runs it (at most twice).
  if (again !== undefined && again !== null && outcome.refused !== undefined && retries < 2) return runWork(again, retries + 1)
  return outcome
}
