/**
 * @module scripts/check-style – the parts of the house style Biome's linter cannot express, checked on
 * the TypeScript syntax tree (strings, comments and regular expressions never count): single quotes,
 * no semicolon ending a line, a space before a function's parameter list and none before a call's
 * arguments, two-space indentation without tabs, no trailing blanks, and lines of package source at
 * most MAX_LINE characters. Run with node (prints each problem, exits 1 on any); the tap test
 * test/core/code-style.test.ts runs the same check.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
/** Longest line of package source, in characters. */
export const MAX_LINE = 200
/** What is not package source: tests, benchmarks and examples may hold longer lines (tables of cases). */
const NOT_SOURCE = /^(test|bench|examples)\//
/** Data files, kept as they came from the vendors. */
const SKIPPED = /(^|\/)fixtures\//

/**
 * Files allowed to hold lines over MAX_LINE for now (empty: every source line is within it). A file
 * listed here while a branch rewrites it must leave once that branch lands.
 * @type {Set<string>}
 */
export const LONG_LINES_ALLOWED = new Set([])

/** Every script of the repository: tracked files and new ones git does not ignore. */
export function repoFiles () {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '--', '*.ts', '*.mts', '*.js', '*.mjs'], { cwd: ROOT, encoding: 'utf8' })
  return [...new Set(out.split('\n'))].filter(f => f !== '' && !SKIPPED.test(f)).sort()
}

/**
 * The style problems of one file, as `line: message`.
 * @param {string} file path relative to ROOT (decides the line-length rule)
 * @param {string} text the file's content
 * @returns {{ line: number, message: string }[]}
 */
export function styleProblems (file, text) {
  /** @type {{ line: number, message: string }[]} */
  const found = []
  const kind = /\.m?ts$/.test(file) ? ts.ScriptKind.TS : ts.ScriptKind.JS
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind)
  /** @param {number} pos @param {string} message */
  const at = (pos, message) => { found.push({ line: src.getLineAndCharacterOfPosition(pos).line + 1, message }) }
  const lines = text.split('\n')
  const limit = NOT_SOURCE.test(file) || LONG_LINES_ALLOWED.has(file) ? Infinity : MAX_LINE
  for (const [i, l] of lines.entries()) {
    if (l.length > limit) found.push({ line: i + 1, message: `line of ${l.length} characters (at most ${MAX_LINE})` })
    if (/^ *\t/.test(l)) found.push({ line: i + 1, message: 'indented with a tab (two spaces per level)' })
    if (/[ \t]$/.test(l)) found.push({ line: i + 1, message: 'trailing blank' })
  }
  /** @param {ts.Node} n */
  const visit = n => {
    if (ts.isStringLiteral(n) && text[n.getStart(src)] === '"' && !n.text.includes('\'')) at(n.getStart(src), 'double-quoted string (single quotes)')
    if (ts.isFunctionDeclaration(n) || ts.isFunctionExpression(n) || ts.isMethodDeclaration(n) || ts.isMethodSignature(n) ||
      ts.isConstructorDeclaration(n) || ts.isGetAccessorDeclaration(n) || ts.isSetAccessorDeclaration(n) ||
      (ts.isArrowFunction(n) && n.modifiers?.some(m => m.kind === ts.SyntaxKind.AsyncKeyword))) {
      const open = n.parameters.pos - 1
      if (text[open] === '(' && text[open - 1] !== ' ') at(open, 'no space before a function\'s parameter list')
    }
    if ((ts.isCallExpression(n) || ts.isNewExpression(n)) && n.arguments !== undefined) {
      const open = n.arguments.pos - 1
      if (text[open] === '(' && text[open - 1] === ' ' && !ts.isParenthesizedExpression(n.expression)) at(open, 'space before a call\'s arguments')
    }
    if ((ts.isStatement(n) || ts.isClassElement(n) || ts.isTypeElement(n)) && !ts.isEmptyStatement(n) && !ts.isForStatement(n.parent)) {
      const end = n.getEnd()
      if (text[end - 1] === ';' && /^[ \t]*(\/\/.*)?(\r?\n|$)/.test(text.slice(end))) at(end - 1, 'semicolon at the end of a line')
    }
    ts.forEachChild(n, visit)
  }
  visit(src)
  return found
}

/** Every problem in the repository, as `file:line: message`, and the allow-list entries that went stale. */
export function checkRepo () {
  const problems = []
  const files = repoFiles()
  for (const f of files) {
    for (const p of styleProblems(f, readFileSync(join(ROOT, f), 'utf8'))) problems.push(`${f}:${p.line}: ${p.message}`)
  }
  const stale = [...LONG_LINES_ALLOWED].filter(f => !files.includes(f) ||
    !readFileSync(join(ROOT, f), 'utf8').split('\n').some(l => l.length > MAX_LINE))
  return { files: files.length, problems, stale }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { problems, stale } = checkRepo()
  for (const p of problems) console.error(p)
  for (const f of stale) console.error(`${f}: no line over ${MAX_LINE} characters any more: remove it from LONG_LINES_ALLOWED in scripts/check-style.mjs`)
  process.exitCode = problems.length + stale.length > 0 ? 1 : 0
}
