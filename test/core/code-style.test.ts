/**
 * @module test/core/code-style – the house style Biome's linter cannot express (scripts/check-style.mjs):
 * every script of the repository passes it, the allow-list of long lines holds no file that no
 * longer needs it, and each rule catches what it is for (and leaves strings and comments alone).
 */
import t from 'tap'
import { checkRepo, styleProblems, MAX_LINE } from '../../scripts/check-style.mjs'

t.test('every script of the repository keeps the house style', async t => {
  const { files, problems, stale } = checkRepo()
  t.ok(files > 300, `the repository's scripts are found (${files})`)
  t.same(problems, [], 'no style problem (run node scripts/check-style.mjs to list them)')
  t.same(stale, [], 'no file in LONG_LINES_ALLOWED without a line over the limit')
})

t.test('each rule catches its case', async t => {
  const cases: [string, string, RegExp][] = [
    ['const a = "x"\n', 'core/x.ts', /double-quoted string/],
    ['const a = 1;\n', 'core/x.ts', /semicolon at the end of a line/],
    ['class A {\n  b = 1;\n}\n', 'core/x.ts', /semicolon at the end of a line/],
    ['interface A {\n  b: string;\n}\n', 'core/x.ts', /semicolon at the end of a line/],
    ['f(); // then\n', 'core/x.ts', /semicolon at the end of a line/],
    ['function f() {}\n', 'core/x.ts', /no space before a function's parameter list/],
    ['class A { m() {} }\n', 'core/x.ts', /no space before a function's parameter list/],
    ['const f = async() => 1\n', 'core/x.ts', /no space before a function's parameter list/],
    ['f (1)\n', 'core/x.ts', /space before a call's arguments/],
    ['if (a) {\n\tb()\n}\n', 'core/x.ts', /indented with a tab/],
    ['const a = 1 \n', 'core/x.ts', /trailing blank/],
    [`const a = '${'x'.repeat(MAX_LINE)}'\n`, 'core/x.ts', /line of \d+ characters/],
  ]
  for (const [text, file, message] of cases) {
    const found = styleProblems(file, text)
    t.equal(found.length, 1, `one problem in ${JSON.stringify(text.slice(0, 40))}`)
    t.match(found[0]?.message, message)
  }
})

t.test('what the house style allows is not flagged', async t => {
  const ok = [
    "const a = 'x'; const b = \"it's\"\n", // statements on one line; double quotes around a single quote
    ';(a ??= []).push(1)\n', // a line that starts with a semicolon
    'for (let i = 0; i < 1; i++) f(i)\n',
    'function f (a: number) { return a }\nconst g = async () => f(1)\nclass A { m () {} }\n',
    '// "quoted"; in a comment\nconst r = /"x";/\n',
    `const a = '${'x'.repeat(MAX_LINE)}'\n`, // a test may hold a long line (tables of cases)
  ]
  for (const [i, text] of ok.entries()) t.same(styleProblems(i === ok.length - 1 ? 'test/x.test.ts' : 'core/x.ts', text), [], JSON.stringify(text.slice(0, 40)))
})
