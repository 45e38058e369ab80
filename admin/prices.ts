/**
 * @module admin/prices – /admin/prices: each model's price from the catalog and the ledger. The
 * ledger's price of a model overrides the config's (money/pricing.ts, cached per replica).
 */
import type { FastifyInstance } from 'fastify'
import type { Static } from '@sinclair/typebox'
import type { Serving } from '../core/http/gateway.ts'
import type { ModelPrice } from '../core/types/model.ts'
import { errorResponses } from './errors.ts'
import * as S from './schemas.ts'
import type { AdminService } from './service.ts'
import { audit, bodyField } from './audit.ts'

/** The catalog is the config version's serving at each request (`serving`). */
export function priceRoutes (app: FastifyInstance, service: AdminService, serving: Serving): void {
  app.get('/admin/prices', { schema: { tags: ['prices'], summary: 'Prices of the catalog and the ledger', response: { 200: S.ListOf(S.PriceRow), ...errorResponses } } }, async () => {
    const ledgerPrices = new Map((await service.ledger.listPrices()).map(p => [p.model, p.price]))
    const rows: Array<Static<typeof S.PriceRow>> = []
    const none: ModelPrice = { input: 0, output: 0 }
    for (const m of serving.gateway.catalog.all()) {
      const lp = ledgerPrices.get(m.id)
      ledgerPrices.delete(m.id)
      const cp = m.price ? { ...m.price } : undefined
      rows.push({ model: m.id, inCatalog: true, source: lp ? 'ledger' : cp ? 'config' : 'none', price: lp ?? cp ?? none, configPrice: cp ?? null, ledgerPrice: lp ?? null })
    }
    for (const [model, lp] of ledgerPrices) rows.push({ model, inCatalog: false, source: 'ledger', price: lp, configPrice: null, ledgerPrice: lp })
    return { data: rows }
  })
  app.put<{ Body: Static<typeof S.SetPrice> }>('/admin/prices',
    { schema: { tags: ['prices'], summary: 'Set a model\'s ledger price (over the config\'s)', body: S.SetPrice, response: { 200: S.PriceRow, ...errorResponses } },
      config: audit('price.set', bodyField('model')) }, async request => {
    const b = request.body
    const price: ModelPrice = { input: b.input, output: b.output }
    if (b.cachedInput !== undefined) price.cachedInput = b.cachedInput
    if (b.cacheWrite !== undefined) price.cacheWrite = b.cacheWrite
    if (b.cacheWrite1h !== undefined) price.cacheWrite1h = b.cacheWrite1h
    await service.setPrice(b.model, price)
    const m = serving.gateway.catalog.all().find(m => m.id === b.model)
    return { model: b.model, inCatalog: !!m, source: 'ledger' as const, price, configPrice: m?.price ? { ...m.price } : null, ledgerPrice: price }
  })
}
