/**
 * @module test/core/no-any – the source the package is built from (tsconfig.json's files) uses no
 * `any` type: wire formats and contracts are typed, or read as `unknown` and narrowed. Counted on
 * the TypeScript syntax tree (every `any` keyword in a type position), not by searching text.
 * The protocol translators (providers/protocols/) are typed in a later pass: until then their
 * count may only go down.
 */
import t from 'tap'
import ts from 'typescript'
import { readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
/** The translators still being typed, and the most `any` they may hold (may only go down). */
const PENDING = 'providers/protocols/'
const PENDING_MAX = 75

/** Lines of every `any` type in one file. */
function anyLines (file: string): number[] {
  const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const lines: number[] = []
  const visit = (n: ts.Node): void => {
    if (n.kind === ts.SyntaxKind.AnyKeyword) lines.push(src.getLineAndCharacterOfPosition(n.getStart(src)).line + 1)
    ts.forEachChild(n, visit)
  }
  visit(src)
  return lines
}

t.test('no `any` in the package source outside the translators still being typed', async t => {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: d => { throw new Error(String(d.messageText)) } })!
  const files = parsed.fileNames.map(f => relative(ROOT, f))
  t.ok(files.length > 100, 'the package sources are found')
  const found: string[] = []
  let pending = 0
  for (const f of files) {
    const lines = anyLines(join(ROOT, f))
    if (f.startsWith(PENDING)) pending += lines.length
    else for (const l of lines) found.push(`${f}:${l}`)
  }
  t.same(found, [], 'no `any` outside providers/protocols/')
  t.ok(pending <= PENDING_MAX, `providers/protocols/ holds ${pending} (at most ${PENDING_MAX}; lower PENDING_MAX as they go)`)
})

t.test('the counter sees `any` wherever a type can be written', async t => {
  const { writeFileSync, mkdtempSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const dir = mkdtempSync(join(tmpdir(), 'no-any-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'sample.ts')
  writeFileSync(file, [
    'let a: any', // 1
    'const b = 1 as any', // 2
    'function f (x: Record<string, any>): any[] { return [x] }', // 3, 3
    'type G<T = any> = T', // 4
    '// a comment that says any is not a type', // none
    "const s = 'any'", // none
  ].join('\n'))
  t.same(anyLines(file), [1, 2, 3, 3, 4])
})
