/**
 * @module money/pricing – the price of a model: the ledger's (set by the admin CLI) over the
 * config's. Used by the balance and quota plugins; core does not price calls.
 */
import { LRUCache } from 'lru-cache'
import type { PriceLookup } from '../core/ledger/ledger.ts'
import type { ModelEntry, ModelPrice } from '../core/types/model.ts'

const NONE: ModelPrice = Object.freeze({ input: 0, output: 0 })

/**
 * A ledger price (token rates only, set by the admin CLI) keeps the config's per-use prices and
 * tier multipliers: those are the catalog's.
 */
function withConfigTerms (p: ModelPrice, model: ModelEntry): ModelPrice {
  const c = model.price
  if (c?.perUse === undefined && c?.serviceTiers === undefined) return p
  return { ...p, perUse: c.perUse, serviceTiers: c.serviceTiers }
}

/**
 * Caches ledger prices for `ttlMs` (a price change reaches every replica within that time).
 * A model with no price anywhere is free.
 */
export class PriceBook {
  readonly #cache: LRUCache<string, { p: ModelPrice | false }>
  readonly ledger: PriceLookup
  constructor (ledger: PriceLookup, ttlMs = 30_000) {
    this.ledger = ledger
    this.#cache = new LRUCache({ max: 10_000, ttl: Math.max(1, ttlMs) })
  }

  /** The price while the cache holds it fresh (no ledger read, no promise); undefined otherwise. */
  cached (model: ModelEntry): ModelPrice | undefined {
    const hit = this.#cache.get(model.id)
    return hit === undefined ? undefined : hit.p ? withConfigTerms(hit.p, model) : model.price || NONE
  }

  async price (model: ModelEntry): Promise<ModelPrice> {
    const hit = this.#cache.get(model.id)
    if (hit) return hit.p ? withConfigTerms(hit.p, model) : model.price || NONE
    const p = await this.ledger.getPrice(model.id)
    this.#cache.set(model.id, { p: p ?? false })
    return p ? withConfigTerms(p, model) : model.price ?? NONE
  }
}
