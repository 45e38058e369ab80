/**
 * @module test/core/layering – core imports nothing that builds on it (plugins/, providers/, money/, admin/,
 * cli/, testing/, the entry files); an import between core's folders, a type import too, only points
 * down the order in LAYERS; and no module of core reaches itself again through its imports.
 */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
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
 * core's folders by concern, bottom to top, as docs/architecture.md's "How the code is laid out" lists them. An
 * import (a type-only one too: it is a dependency of the code's meaning, even when the build erases
 * it) may name a file in its own folder or in a folder earlier in this list, never a later one. A
 * lower folder that needs something of a higher one declares the little it needs as its own interface.
 *   errors   – the error table, localized messages, the error body a client gets
 *   types    – shapes everything shares: model, principal, usage, route names, a call's outcome, phases
 *   tokens   – token counting and estimates
 *   config   – the config document, its schema, loading and ajv validation
 *   stores   – key-value stores (memory, Redis) for plugins' counters and claims
 *   ledger   – keys, prices, balances and usage records (SQLite, PostgreSQL)
 *   dispatch – the upstream side: provider contract, catalog, deployment order, circuits, the upstream call
 *   pipeline – the plugin contract, building the pipeline
 *   call     – one call: its lifecycle, the call object and hook runner, its way upstream and back
 *   observe  – access log, metrics, traces
 *   http     – the fastify app that assembles everything, the services it holds, its routes, the body and connection edge
 */
const LAYERS = ['errors', 'types', 'tokens', 'config', 'stores', 'ledger', 'dispatch', 'pipeline', 'call', 'observe', 'http']

/** Static imports and re-exports (`import type` and `export type` included), bare and dynamic imports. */
const IMPORT = /(?:^|[;\n])\s*(?:import|export)\s+(?:type\s+)?[^;'"]*?\s*from\s*(['"])([^'"\n]+)\1|(?:^|[;\n])\s*import\s*(['"])([^'"\n]+)\3|\bimport\s*\(\s*(['"])([^'"\n]+)\5/g

/** The relative specifiers a source text imports, type-only ones included. */
function importsOf (text: string): string[] {
  return [...text.matchAll(IMPORT)].map(m => m[2] ?? m[4] ?? m[6]).filter(spec => spec.startsWith('.'))
}

/** The core folder a file lives in (`''` for a file at the top of core/), or null outside core/. */
function coreFolder (path: string): string | null {
  const r = relative(CORE, path).split(sep)
  if (r[0] === '..' || r.length === 0) return null
  return r.length === 1 ? '' : r[0]
}

/** Imports from `file` (type-only ones included) that point up the LAYERS order. */
function upwardBetweenFolders (file: string, text: string): string[] {
  const from = LAYERS.indexOf(coreFolder(file) ?? '')
  return importsOf(text).filter(spec => {
    const folder = coreFolder(resolve(dirname(file), spec))
    return folder !== null && LAYERS.indexOf(folder) > from
  })
}

t.test('layering – core is grouped into the folders of LAYERS, and imports between them, type imports too, only point down', async t => {
  const files = sourceFiles(CORE)
  t.same(files.filter(f => coreFolder(f) === '').map(f => relative(ROOT, f)), [], 'no source file at the top of core/: each lives in a folder by concern')
  const folders = readdirSync(CORE, { withFileTypes: true }).filter(e => e.isDirectory()).map(e => e.name)
  t.same(folders.filter(f => !LAYERS.includes(f)), [], 'every folder of core/ has its place in LAYERS')
  const found = files.flatMap(f => upwardBetweenFolders(f, readFileSync(f, 'utf8')).map(spec => `${relative(ROOT, f)} → ${spec}`))
  t.same(found, [])
})

t.test('layering – the folder rule sees runtime and type-only imports up the order', async t => {
  const file = join(CORE, 'dispatch', 'probe.ts')
  const text = [
    "import { a } from '../call/call.ts'",
    "import type { B } from '../http/gateway.ts'",
    "import { type C, type D } from '../pipeline/plugin.ts'",
    "export { G } from '../http/routes/inference.ts'",
    "export type { H } from '../observe/metrics.ts'",
    "const i = await import('../http/app.ts')",
    "import '../http/body.ts'",
    "import { J } from '../errors/errors.ts'",
    "import { K } from './sse.ts'",
    "import type { L } from '../types/context.ts'",
    "import { M } from '../tokens/estimate.ts'",
    "import pino from 'pino'",
  ].join('\n')
  t.same(upwardBetweenFolders(file, text).sort(), [
    '../call/call.ts', '../http/app.ts', '../http/body.ts', '../http/gateway.ts', '../http/routes/inference.ts', '../observe/metrics.ts', '../pipeline/plugin.ts',
  ])
})

/** Each circle in a graph of modules (its strongly connected components of more than one module, or a module importing itself). */
function circles (graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const out: string[][] = []
  const visit = (v: string): void => {
    index.set(v, next); low.set(v, next); next++
    stack.push(v); onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)) } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) !== index.get(v)) return
    const component: string[] = []
    let w: string
    do { w = stack.pop()!; onStack.delete(w); component.push(w) } while (w !== v)
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(component.sort())
  }
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v)
  return out.sort((x, y) => x[0].localeCompare(y[0]))
}

t.test('layering – no import circles inside core, type imports included', async t => {
  const graph = new Map(sourceFiles(CORE).map(f => [relative(ROOT, f), importsOf(readFileSync(f, 'utf8')).map(spec => relative(ROOT, resolve(dirname(f), spec)))]))
  t.same(circles(graph), [])
})

t.test('layering – the circle check finds direct, longer and self circles, and nothing in a chain', async t => {
  const graph = new Map<string, string[]>([
    ['a', ['b']], ['b', ['a', 'c']], ['c', ['d']], ['d', ['e']], ['e', ['c']], ['f', ['f']], ['g', ['h', 'outside']], ['h', []],
  ])
  t.same(circles(graph), [['a', 'b'], ['c', 'd', 'e'], ['f']])
  t.same(circles(new Map([['g', ['h']], ['h', []]])), [])
})
