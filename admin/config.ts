/** @module admin/config – GET /admin/config: the package version, the config version serving (a reload swaps it) and its config, secrets masked. */
import { readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import type { Serving } from '../core/http/gateway.ts'
import { errorResponses } from './errors.ts'
import { maskSecrets } from './mask.ts'
import * as S from './schemas.ts'

/** The package's version: package.json one level up from the sources, two from dist/. */
export const VERSION: string = (() => {
  for (const rel of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8'))
      if (typeof pkg.version === 'string') return pkg.version
    } catch { /* try the next */ }
  }
  return 'unknown'
})()

/** The version serving at each request (`serving`): a reload shows at once. */
export function configRoutes (app: FastifyInstance, serving: Serving): void {
  app.get('/admin/config', { schema: { tags: ['config'], summary: 'Package and config version, running config (secrets masked)', response: { 200: S.ConfigView, ...errorResponses } } }, async () => {
    const gw = serving.gateway
    return {
      version: VERSION,
      configVersion: gw.configVersion,
      loadedAt: new Date(gw.configLoadedAt).toISOString(),
      node: process.version,
      source: gw.config.source,
      config: maskSecrets(gw.config) as Record<string, unknown>,
    }
  })
}
