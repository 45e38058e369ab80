/**
 * @module test/core/layering – core imports nothing that builds on it (plugins/, providers/, money/, admin/,
 * cli/, testing/, the entry files), and, once core/ is grouped into folders by concern, a runtime
 * import between core's folders only points down the order in LAYERS.
 */
import t from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const CORE = join(ROOT, 'core')
/** What builds on core: server.ts composes these, so core never reaches up into them. */
const FORBIDDEN = ['plugins', 'providers', 'money', 'admin', 'cli', 'testing', 'index.ts', 'testing.ts', 'server.ts']

/** `from '…'`, `import '…'`, `import('…')` and `require('…')`, comments included (a commented import is still a hint of one). */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)(['"])([^'"\n]+)\1/g

function sourceFiles (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(e => {
    const path = join(dir, e.name)
    if (e.isDirectory()) return sourceFiles(path)
    return /\.(c|m)?[jt]s$/.test(e.name) ? [path] : []
  })
}

/** The top-level folder a relative specifier lands in, or null for a package import. */
function topFolder (file: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null
  return relative(ROOT, resolve(dirname(file), specifier)).split(sep)[0]
}

/** The specifiers in `text` (the source of `file`) that reach a forbidden folder. */
function upwardSpecifiers (file: string, text: string): string[] {
  return [...text.matchAll(SPECIFIER)].map(m => m[2]).filter(spec => FORBIDDEN.includes(topFolder(file, spec) ?? ''))
}

t.test('layering – no file under core/ imports from plugins/, providers/, money/, admin/, cli/, testing/ or the entry files', async t => {
  const files = sourceFiles(CORE)
  t.ok(files.length > 20, 'the core sources are found')
  const found = files.flatMap(f => upwardSpecifiers(f, readFileSync(f, 'utf8')).map(spec => `${relative(ROOT, f)} → ${spec}`))
  t.same(found, [])
})

t.test('layering – the check sees static, dynamic and re-export specifiers', async t => {
  const probe = join(CORE, 'routes', 'probe.ts')
  const text = [
    "import { a } from '../../plugins/index.ts'",
    'export { b } from "../../providers/index.ts"',
    "const c = await import('../../providers/echo/index.ts')",
    "import '../../plugins/auth/index.ts'",
    "import { PriceBook } from '../../money/pricing.ts'",
    "import type { Usage } from '../../index.ts'",
    "import type { D } from '../app.ts'",
    "import { E } from '../plugin.ts'",
    "import pino from 'pino'",
  ].join('\n')
  t.same(upwardSpecifiers(probe, text), [
    '../../plugins/index.ts', '../../providers/index.ts', '../../providers/echo/index.ts', '../../plugins/auth/index.ts',
    '../../money/pricing.ts', '../../index.ts',
  ])
})

/**
 * core's folders by concern, bottom to top. A runtime import (anything but `import type` /
 * `export type`, or braces holding only `type` names, which the build erases) may name a file in its
 * own folder or in a folder earlier in this list, never a later one. Type-only imports may point
 * anywhere: the contracts (context, plugin, provider, gateway) describe each other.
 *   errors   – the error table, localized messages, the error body a client gets
 *   types    – shapes everything shares: model, principal, usage, the call context, phases
 *   config   – the config document, its schema, loading and ajv validation
 *   stores   – key-value stores (memory, Redis) for plugins' counters and claims
 *   ledger   – keys, prices, balances and usage records (SQLite, PostgreSQL)
 *   dispatch – the provider contract, catalog and routing, the upstream call, the answer's way out
 *   pipeline – the plugin contract, building the pipeline, running its hooks over a call's lifecycle
 *   routes   – the HTTP routes and the Gateway they read from the app
 *   observe  – metrics, traces and their routes (issue 15's branch; absent until it merges)
 *   http     – the fastify app that assembles everything, the request body and connection edge
 */
const LAYERS = ['errors', 'types', 'config', 'stores', 'ledger', 'dispatch', 'pipeline', 'routes', 'observe', 'http']

/** One import in a source text: its specifier and whether it survives the build. */
interface ImportSpec { spec: string, runtime: boolean }

const STATIC_IMPORT = /(?:^|[;\n])\s*(import|export)\s+(type\s+)?([^;'"]*?)\s*from\s*(['"])([^'"\n]+)\4/g
const BARE_OR_DYNAMIC = /(?:^|[;\n])\s*import\s*(['"])([^'"\n]+)\1|\bimport\s*\(\s*(['"])([^'"\n]+)\3/g

function importsOf (text: string): ImportSpec[] {
  const out: ImportSpec[] = []
  for (const m of text.matchAll(STATIC_IMPORT)) {
    const clause = m[3].trim()
    const braces = /^\{([^}]*)\}$/.exec(clause)
    const onlyTypes = braces !== null && braces[1].split(',').map(s => s.trim()).filter(Boolean).every(s => s.startsWith('type '))
    out.push({ spec: m[5], runtime: !m[2] && !onlyTypes })
  }
  for (const m of text.matchAll(BARE_OR_DYNAMIC)) out.push({ spec: m[2] ?? m[4], runtime: true })
  return out
}

/** The core folder a file lives in (`''` for a file at the top of core/), or null outside core/. */
function coreFolder (path: string): string | null {
  const r = relative(CORE, path).split(sep)
  if (r[0] === '..' || r.length === 0) return null
  return r.length === 1 ? '' : r[0]
}

/** Runtime imports from `file` that point up the LAYERS order. */
function upwardBetweenFolders (file: string, text: string): string[] {
  const from = LAYERS.indexOf(coreFolder(file) ?? '')
  return importsOf(text).filter(i => {
    if (!i.runtime || !i.spec.startsWith('.')) return false
    const folder = coreFolder(resolve(dirname(file), i.spec))
    return folder !== null && LAYERS.indexOf(folder) > from
  }).map(i => i.spec)
}

// The folders arrive with a script the lead runs after merging (it moves the files and rewrites every
// import); until then core/ is flat and this rule waits, so the check below activates by itself.
const GROUPED = ['errors', 'config', 'dispatch', 'pipeline', 'http'].every(f => existsSync(join(CORE, f)))

t.test('layering – core is grouped into the folders of LAYERS, and runtime imports between them only point down', { skip: GROUPED ? false : 'core/ is not grouped into folders yet' }, async t => {
  const files = sourceFiles(CORE)
  t.same(files.filter(f => coreFolder(f) === '').map(f => relative(ROOT, f)), [], 'no source file at the top of core/: each lives in a folder by concern')
  const folders = readdirSync(CORE, { withFileTypes: true }).filter(e => e.isDirectory()).map(e => e.name)
  t.same(folders.filter(f => !LAYERS.includes(f)), [], 'every folder of core/ has its place in LAYERS')
  const found = files.flatMap(f => upwardBetweenFolders(f, readFileSync(f, 'utf8')).map(spec => `${relative(ROOT, f)} → ${spec}`))
  t.same(found, [])
})

t.test('layering – the folder rule sees runtime imports up the order and lets type-only imports through', async t => {
  const file = join(CORE, 'dispatch', 'probe.ts')
  const text = [
    "import { a } from '../pipeline/runner.ts'",
    "import type { B } from '../http/gateway.ts'",
    "import { type C, type D } from '../pipeline/plugin.ts'",
    "import { type E, F } from '../pipeline/plugin-errors.ts'",
    "export { G } from '../routes/inference.ts'",
    "export type { H } from '../routes/models.ts'",
    "const i = await import('../http/app.ts')",
    "import '../http/body.ts'",
    "import { J } from '../errors/errors.ts'",
    "import { K } from './sse.ts'",
    "import { L } from '../types/context.ts'",
    "import pino from 'pino'",
  ].join('\n')
  t.same(upwardBetweenFolders(file, text).sort(), [
    '../http/app.ts', '../http/body.ts', '../pipeline/plugin-errors.ts', '../pipeline/runner.ts', '../routes/inference.ts',
  ])
})
