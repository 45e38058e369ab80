// Bundles the operator console (console/) into dist/console: one minified JS file and one CSS file
// with content-hashed names (served as immutable) and index.html (served no-cache). No CDN: every
// byte the page needs is in these files. Fails when the JS exceeds 150 KB gzipped.
import { build } from 'esbuild'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
/** The gzipped JS may not exceed this (bytes); env CONSOLE_SIZE_LIMIT sets another (the build test lowers it). */
const LIMIT = Number(process.env.CONSOLE_SIZE_LIMIT || 150 * 1024)
// Built into a private directory, then swapped in with renames: a gateway starting while the
// console is rebuilt (tests build it too) never reads a half-written directory.
const final = join(root, 'dist', 'console')
const out = `${final}.tmp-${process.pid}`
rmSync(out, { recursive: true, force: true })
mkdirSync(join(out, 'assets'), { recursive: true })

const result = await build({
  entryPoints: { app: join(root, 'console', 'main.js') },
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  outdir: join(out, 'assets'),
  absWorkingDir: root,
  entryNames: '[name]-[hash]',
  loader: { '.css': 'css' },
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
})
const files = Object.keys(result.metafile.outputs).map(f => basename(f))
const js = files.find(f => f.endsWith('.js'))
const css = files.find(f => f.endsWith('.css'))
if (!js || !css) throw new Error(`build-console: expected one .js and one .css, got ${files.join(', ')}`)
const html = readFileSync(join(root, 'console', 'index.html'), 'utf8')
  .replace('%CSS%', `/console/assets/${css}`).replace('%JS%', `/console/assets/${js}`)
writeFileSync(join(out, 'index.html'), html)
const gz = gzipSync(readFileSync(join(out, 'assets', js))).length
// On stderr: `npm pack --json` runs this build (prepack) and its stdout must stay pure JSON.
console.error(`console: ${js} ${(gz / 1024).toFixed(1)} KB gzipped, ${css}`)
// Checked before the swap: a bundle over the limit never replaces the one in dist/console.
if (gz > LIMIT) {
  rmSync(out, { recursive: true, force: true })
  console.error(`build-console: the console JS is ${gz} bytes gzipped, over the ${LIMIT} byte limit (150 KB); dist/console is left as it was`)
  process.exit(1)
}
const old = `${final}.old-${process.pid}`
if (existsSync(final)) renameSync(final, old)
renameSync(out, final)
rmSync(old, { recursive: true, force: true })
