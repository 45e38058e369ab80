// The translators read untrusted JSON from clients and upstreams: their wire shapes are typed (what
// is read is `unknown` until checked, what is built has its exact type), never `any`. Counted on
// the syntax tree, so a comment or a string that spells "any" does not count.
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'

const DIR = join(import.meta.dirname, '../../providers/protocols')

/** `file:line` of every `any` keyword in a TypeScript source text. */
function anyKeywords (file: string, text: string): string[] {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found: string[] = []
  const walk = (node: ts.Node): void => {
    if (node.kind === ts.SyntaxKind.AnyKeyword) found.push(`${file}:${src.getLineAndCharacterOfPosition(node.getStart()).line + 1}`)
    ts.forEachChild(node, walk)
  }
  walk(src)
  return found
}

t.test('anyKeywords – finds the keyword in types, not in comments or strings', async t => {
  t.same(anyKeywords('x.ts', 'let a: any = 1\nfunction f (b: Record<string, any>): void {}\n'), ['x.ts:1', 'x.ts:2'])
  t.same(anyKeywords('x.ts', '// any\nconst s = "any"\nlet u: unknown\n'), [])
})

t.test('providers/protocols – no `any` in the translators and their wire types', async t => {
  const files = readdirSync(DIR).filter(f => f.endsWith('.ts'))
  t.ok(files.length >= 10, 'the translator files are found')
  const found = files.flatMap(f => anyKeywords(f, readFileSync(join(DIR, f), 'utf8')))
  t.same(found, [], 'every `any`, as file:line')
})
