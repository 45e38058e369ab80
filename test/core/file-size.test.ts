/**
 * @module test/core/file-size – no source file under core/ is longer than 300 lines, none under
 * plugins/ longer than 150: a longer file is a room doing two jobs. Files being split on other
 * branches are listed in KNOWN_OFFENDERS, each until its split is merged; an entry that is no
 * longer over its limit fails too, so the list only shrinks and never hides a new offender.
 */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const LIMITS: Record<string, number> = { core: 300, plugins: 150 }

/**
 * Files allowed over their limit for now (empty: none is). A file listed while a branch splits it must
 * leave once that branch lands: the test fails while a listed file or folder has no file over the
 * limit any more. A folder entry (ending in '/') covers every file under it.
 */
const KNOWN_OFFENDERS: readonly string[] = []

function sourceFiles (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(e => {
    const path = join(dir, e.name)
    if (e.isDirectory()) return sourceFiles(path)
    return /\.(c|m)?[jt]sx?$/.test(e.name) ? [path] : []
  })
}

/** Lines of a text as an editor counts them (a final newline ends the last line, it adds none). */
function lineCount (text: string): number {
  if (text === '') return 0
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
}

/** The KNOWN_OFFENDERS entry (of `list`) that covers `file`, if one does. */
const known = (file: string, list: readonly string[] = KNOWN_OFFENDERS): string | undefined =>
  list.find(k => k.endsWith('/') ? file.startsWith(k) : file === k)

/** Files over their limit that no entry of `list` covers, and entries of `list` that cover none of them. */
function verdict (over: ReadonlyMap<string, string>, list: readonly string[]): { unlisted: string[], stale: string[] } {
  return {
    unlisted: [...over.entries()].filter(([path]) => known(path, list) === undefined).map(([, why]) => why),
    stale: list.filter(k => ![...over.keys()].some(path => known(path, list) === k)),
  }
}

/** Every file over its folder's limit, as `path (lines > limit)`, by repository path. */
function overLimit (): Map<string, string> {
  const out = new Map<string, string>()
  for (const [top, limit] of Object.entries(LIMITS)) {
    for (const f of sourceFiles(join(ROOT, top))) {
      const n = lineCount(readFileSync(f, 'utf8'))
      const path = relative(ROOT, f).split(sep).join('/')
      if (n > limit) out.set(path, `${path} (${n} lines > ${limit})`)
    }
  }
  return out
}

t.test(`file size – core/ files at most ${LIMITS.core} lines, plugins/ files at most ${LIMITS.plugins}, but for the known offenders`, async t => {
  const { unlisted, stale } = verdict(overLimit(), KNOWN_OFFENDERS)
  t.same(unlisted, [], 'no file over its limit outside KNOWN_OFFENDERS')
  t.same(stale, [], 'every KNOWN_OFFENDERS entry still has a file over its limit (remove the others)')
})

t.test('file size – a new offender and a stale entry are both reported', async t => {
  const over = new Map([['core/a.ts', 'core/a.ts (301 lines > 300)'], ['plugins/x/y.ts', 'plugins/x/y.ts (151 lines > 150)']])
  t.same(verdict(over, ['plugins/x/', 'core/gone.ts']), { unlisted: ['core/a.ts (301 lines > 300)'], stale: ['core/gone.ts'] })
  t.same(verdict(over, ['core/a.ts', 'plugins/x/']), { unlisted: [], stale: [] }, 'a folder entry covers the files under it')
})

t.test('file size – lines are counted as an editor shows them', async t => {
  t.equal(lineCount(''), 0)
  t.equal(lineCount('a'), 1)
  t.equal(lineCount('a\n'), 1)
  t.equal(lineCount('a\nb\n'), 2)
  t.equal(lineCount('a\n\n'), 2)
})
