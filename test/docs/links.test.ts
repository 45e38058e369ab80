/**
 * @module test/docs/links – README and docs/ stay a map that leads somewhere: every relative link names
 * a file of the repository, every `#anchor` a heading of its target (GitHub's heading ids), and every
 * document under docs/ is reachable from README.
 */
import t from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'

const DOCS = ['README.md', ...readdirSync('docs').filter(f => f.endsWith('.md')).map(f => `docs/${f}`)]

/** Markdown text without its fenced code blocks (links and headings there are examples). */
const prose = (text: string): string => text.replace(/^```[\s\S]*?^```/gm, '')

/** GitHub's heading id: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2... */
function anchors (file: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const m of prose(readFileSync(file, 'utf8')).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = (m[1] as string).trim().toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, '').replace(/ /g, '-')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

t.test('every relative link and anchor in README and docs/ resolves', async t => {
  for (const file of DOCS) {
    for (const m of prose(readFileSync(file, 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1] as string
      if (/^(https?|mailto):/.test(target)) continue
      const [path, anchor] = target.split('#') as [string, string | undefined]
      const resolved = path === '' ? file : normalize(join(dirname(file), path))
      if (!existsSync(resolved)) { t.fail(`${file}: link to ${target}: no such file`); continue }
      if (anchor !== undefined && resolved.endsWith('.md')) {
        t.ok(anchors(resolved).has(anchor), `${file}: link to ${target}: the heading exists`)
      }
    }
  }
})

t.test('every document under docs/ is linked from README', async t => {
  const readme = readFileSync('README.md', 'utf8')
  for (const file of DOCS.slice(1)) t.ok(readme.includes(`](${file}`), `README links ${file}`)
})

t.test('README stays short: what it is, the quick start and a map (the reference lives in docs/)', async t => {
  const lines = readFileSync('README.md', 'utf8').split('\n').length
  t.ok(lines <= 300, `README.md has ${lines} lines (at most 300)`)
})
