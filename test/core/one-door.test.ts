/**
 * @module test/core/one-door – the built-in plugins and adapters come in through the one door an
 * outside author has: a file under plugins/ or providers/ imports the public entry (index.ts) and the
 * files of its own folder, nothing else (not core/, not money/, not another plugin's or adapter's
 * files); the two built-in lists (plugins/index.ts, providers/index.ts) name their members' folders.
 * admin/ and cli/ use no plugin's internals: what they share with a plugin lives in core or the entry;
 * and the public entries themselves build on no built-in plugin or adapter.
 */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/** Static imports and re-exports (type-only ones included), bare and dynamic imports: the specifiers. */
const IMPORT = /(?:^|[;\n])\s*(?:import|export)\s+(?:type\s+)?[^;'"]*?\s*from\s*(['"])([^'"\n]+)\1|(?:^|[;\n])\s*import\s*(['"])([^'"\n]+)\3|\bimport\s*\(\s*(['"])([^'"\n]+)\5/g

function sourceFiles (dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter(f => /\.(c|m)?[jt]sx?$/.test(f)).map(f => join(dir, f).split(sep).join('/'))
}

/** The repository paths (from ROOT) that a source text's relative specifiers reach. */
function targetsOf (file: string, text: string): string[] {
  return [...text.matchAll(IMPORT)].map(m => m[2] ?? m[4] ?? m[6]).filter(s => s.startsWith('.'))
    .map(s => relative(ROOT, resolve(ROOT, dirname(file), s)).split(sep).join('/'))
}

/** The unit a file under plugins/ or providers/ belongs to: its folder (`plugins/auth`), or the file itself at the top. */
function unitOf (path: string): string {
  const parts = path.split('/')
  return parts.length > 2 ? parts.slice(0, 2).join('/') : path
}

/** Why an import from `file` (under plugins/ or providers/) to `target` goes round the door; undefined when it does not. */
function sideDoor (file: string, target: string): string | undefined {
  if (target === 'index.ts') return undefined
  if (target.startsWith('core/') || target.startsWith('money/')) return 'reaches into core or money'
  const top = file.split('/')[0]
  const isList = file === `${top}/index.ts`
  if (isList && target.startsWith(`${top}/`) && target.split('/').length === 3 && target.endsWith('/index.ts')) return undefined
  if (unitOf(target) === unitOf(file) && !isList) return undefined
  return 'is not the public entry nor a file of its own folder'
}

/** Why an import from admin/ or cli/ to `target` uses a plugin's internals; undefined when it does not. */
function pluginInternal (target: string): string | undefined {
  if (!target.startsWith('plugins/')) return undefined
  const parts = target.split('/')
  return parts.length === 2 || (parts.length === 3 && parts[2] === 'index.ts') ? undefined : 'a plugin\'s internals'
}

t.test('one door – plugins/ and providers/ import the public entry and their own folder only', async t => {
  const files = [...sourceFiles('plugins'), ...sourceFiles('providers')]
  t.ok(files.length > 40, `${files.length} files under plugins/ and providers/ read`)
  const found = files.flatMap(f => targetsOf(f, readFileSync(join(ROOT, f), 'utf8')).flatMap(to => {
    const why = sideDoor(f, to)
    return why === undefined ? [] : [`${f} → ${to}: ${why}`]
  }))
  t.same(found, [])
})

t.test('one door – admin/ and cli/ use no plugin internals', async t => {
  const files = [...sourceFiles('admin'), ...sourceFiles('cli')]
  t.ok(files.length > 5, `${files.length} files under admin/ and cli/ read`)
  const found = files.flatMap(f => targetsOf(f, readFileSync(join(ROOT, f), 'utf8')).flatMap(to => {
    const why = pluginInternal(to)
    return why === undefined ? [] : [`${f} → ${to}: ${why}`]
  }))
  t.same(found, [])
})

t.test('one door – the public entries build on core (and money), never on a built-in plugin or adapter', async t => {
  const found = ['index.ts', 'testing.ts'].flatMap(f => targetsOf(f, readFileSync(join(ROOT, f), 'utf8'))
    .filter(to => to.startsWith('plugins/') || to.startsWith('providers/')).map(to => `${f} → ${to}`))
  t.same(found, [])
})

t.test('one door – the checks see every kind of import and every side door', async t => {
  const text = [
    "import { a } from '../../index.ts'",
    "import type { B } from '../../core/types/usage.ts'",
    "export { c } from '../../money/billing.ts'",
    "const d = await import('../quota/lease.ts')",
    "import './schema.ts'",
    "import { e } from './sync/counter.ts'",
    "import { f } from '../base-url.ts'",
    "import pino from 'pino'",
  ].join('\n')
  const file = 'plugins/ip-limit/index.ts'
  t.same(targetsOf(file, text).map(to => [to, sideDoor(file, to)]), [
    ['index.ts', undefined],
    ['core/types/usage.ts', 'reaches into core or money'],
    ['money/billing.ts', 'reaches into core or money'],
    ['plugins/quota/lease.ts', 'is not the public entry nor a file of its own folder'],
    ['plugins/ip-limit/schema.ts', undefined],
    ['plugins/ip-limit/sync/counter.ts', undefined],
    ['plugins/base-url.ts', 'is not the public entry nor a file of its own folder'],
  ])
  t.equal(sideDoor('plugins/index.ts', 'plugins/auth/index.ts'), undefined, 'the built-in list names a plugin')
  t.equal(sideDoor('plugins/index.ts', 'plugins/auth/keys.ts'), 'is not the public entry nor a file of its own folder', 'but not its internals')
  t.equal(sideDoor('providers/echo/index.ts', 'providers/protocols/usage.ts'), 'is not the public entry nor a file of its own folder')
  t.equal(pluginInternal('plugins/auth/keys.ts'), 'a plugin\'s internals')
  t.equal(pluginInternal('plugins/index.ts'), undefined)
  t.equal(pluginInternal('core/ledger/ledger.ts'), undefined)
})
