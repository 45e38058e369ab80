/**
 * @module admin/console – serves the operator console (built by scripts/build-console.mjs into
 * dist/console) on the admin listener: `/console` (the HTML, `Cache-Control: no-cache`) and
 * `/console/assets/<name>` (content-hashed names, `Cache-Control: public, max-age=31536000,
 * immutable`, with an ETag). These paths need no admin key: the page holds no data, every data
 * call it makes to /admin/* sends the key the operator typed in.
 */
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyReply } from 'fastify'

interface Asset { body: Buffer, type: string, etag: string }

/** dist/console next to the sources (../dist/console from admin/) or to the build (../console from dist/admin/). */
export function consoleDir (): string | undefined {
  // The built directory has assets/ (the source folder console/ has an index.html template only).
  for (const rel of ['../dist/console/', '../console/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url))
    if (existsSync(`${dir}index.html`) && existsSync(`${dir}assets`)) return dir.replace(/\/$/, '')
  }
  return undefined
}

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' }
const etagOf = (b: Buffer): string => `"${createHash('sha256').update(b).digest('base64url').slice(0, 27)}"`
/** The page may load only its own script and style, and talk only to its own origin. */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data: blob:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

/** True for the paths the console routes answer (served without an admin key). */
export const isConsolePath = (path: string): boolean => path === '/console' || path === '/console/' || path.startsWith('/console/assets/')

/**
 * Mounts the console routes. The asset set is read once from `dir` into memory: a name not in it
 * is 404 (no path from the URL ever reaches the file system, so no traversal).
 */
export function consoleRoutes (app: FastifyInstance, dir: string | undefined = consoleDir()): void {
  const assets = new Map<string, Asset>()
  let html: Buffer | undefined
  if (dir) {
    // A directory swapped away while it is read (a rebuild) serves as "not built", never a start-up failure.
    try {
      html = readFileSync(`${dir}/index.html`)
      for (const name of readdirSync(`${dir}/assets`)) {
        const ext = name.slice(name.lastIndexOf('.'))
        const type = TYPES[ext]
        if (!type) continue
        const body = readFileSync(`${dir}/assets/${name}`)
        assets.set(name, { body, type, etag: etagOf(body) })
      }
    } catch {
      html = undefined
      assets.clear()
    }
  }
  const page = async (_: unknown, reply: FastifyReply) => {
    if (!html) {
      return reply.code(404).header('content-type', 'application/json; charset=utf-8')
        .send(JSON.stringify({ error: { code: 404, message: 'The console is not built: run npm run build.' } }))
    }
    return reply.header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-cache')
      .header('content-security-policy', CSP).header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer').send(html)
  }
  app.get('/console', { schema: { hide: true } }, page)
  app.get('/console/', { schema: { hide: true } }, page)
  app.get<{ Params: { name: string } }>('/console/assets/:name', { schema: { hide: true } }, async (request, reply) => {
    const a = assets.get(request.params.name)
    if (!a) {
      return reply.code(404).header('content-type', 'application/json; charset=utf-8')
        .send(JSON.stringify({ error: { code: 404, message: `No console asset "${request.params.name}".` } }))
    }
    reply.header('cache-control', 'public, max-age=31536000, immutable').header('etag', a.etag).header('x-content-type-options', 'nosniff')
    if (request.headers['if-none-match'] === a.etag) return reply.code(304).send()
    return reply.header('content-type', a.type).send(a.body)
  })
}
