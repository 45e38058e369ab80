/** @module test/core/layering – core imports nothing that builds on it (plugins/, providers/, money/, cli/, testing/, the entry files). */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const CORE = join(ROOT, 'core')
/** What builds on core: server.ts composes these, so core never reaches up into them. */
const FORBIDDEN = ['plugins', 'providers', 'money', 'cli', 'testing', 'index.ts', 'testing.ts', 'server.ts']

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

t.test('layering – no file under core/ imports from plugins/, providers/, money/, cli/, testing/ or the entry files', async t => {
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
