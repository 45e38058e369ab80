/**
 * @module test/core/no-any – the source the package is built from (tsconfig.json's files) uses no
 * `any` type: wire formats and contracts are typed, or read as `unknown` and narrowed. Counted on
 * the TypeScript syntax tree (every `any` keyword in a type position), not by searching text.
 * The tests (the rest of tsconfig.test.json's files) are being typed the same way: their count is
 * a ratchet, TEST_ANY exactly, so a new `any` fails and a removed one asks for the number to drop.
 */
import t from 'tap'
import ts from 'typescript'
import { readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
/** The `any` still in the tests: lower it whenever one goes (the test says to); never raise it. */
const TEST_ANY = 111

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

/** The files of one tsconfig, relative to the root. */
function filesOf (config: string): string[] {
  const host = { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d: ts.Diagnostic) => { throw new Error(String(d.messageText)) } }
  const parsed = ts.getParsedCommandLineOfConfigFile(join(ROOT, config), {}, host)
  if (parsed === undefined) throw new Error(`${config} could not be read`)
  return parsed.fileNames.map(f => relative(ROOT, f))
}

t.test('no `any` in the package source', async t => {
  const files = filesOf('tsconfig.json')
  t.ok(files.length > 100, 'the package sources are found')
  const found = files.flatMap(f => anyLines(join(ROOT, f)).map(l => `${f}:${l}`))
  t.same(found, [], 'no `any` in the package source')
})

t.test(`the tests hold exactly TEST_ANY (${TEST_ANY}) \`any\``, async t => {
  const source = new Set(filesOf('tsconfig.json'))
  const files = filesOf('tsconfig.test.json').filter(f => !source.has(f) && /\.m?ts$/.test(f))
  t.ok(files.some(f => f.startsWith('test/')), 'the test files are found')
  const found = files.flatMap(f => anyLines(join(ROOT, f)).map(l => `${f}:${l}`))
  t.ok(found.length <= TEST_ANY, `no new \`any\` in the tests: type it (unknown and narrowing, or the SDK's types); found ${found.length}`)
  t.ok(found.length >= TEST_ANY, `${TEST_ANY - found.length} \`any\` fewer: lower TEST_ANY in test/core/no-any.test.ts to ${found.length}`)
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
