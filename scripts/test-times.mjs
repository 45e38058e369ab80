#!/usr/bin/env node
/**
 * @module scripts/test-times – prints how long each test file and each directory of test files took
 * in the last tap run (tap keeps each file's output in .tap/test-results/), slowest first, so the
 * suite's growth is visible in every CI log. Usage: node scripts/test-times.mjs [top N files, default 15]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

const root = '.tap/test-results'
const top = Number(process.argv[2] ?? 15)
const files = []
function walk (dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) walk(path)
    else if (name.endsWith('.tap')) {
      // The file's own total is the last top-level `# time=` line tap writes.
      const times = [...readFileSync(path, 'utf8').matchAll(/^# time=([\d.]+)ms$/gm)]
      const ms = times.length ? Number(times[times.length - 1][1]) : NaN
      files.push({ file: relative(root, path).replace(/\.tap$/, ''), ms })
    }
  }
}
try { walk(root) } catch { console.log('no tap results (.tap/test-results) to time'); process.exit(0) }
const s = ms => (ms / 1000).toFixed(1).padStart(7) + ' s'
const byDir = new Map()
for (const f of files) {
  const dir = f.file.split('/').slice(0, 2).join('/')
  byDir.set(dir, (byDir.get(dir) ?? 0) + (Number.isFinite(f.ms) ? f.ms : 0))
}
const total = [...byDir.values()].reduce((a, b) => a + b, 0)
console.log(`== test time by directory (sum of files, run 2 at a time): ${s(total)} in ${files.length} files`)
for (const [dir, ms] of [...byDir].sort((a, b) => b[1] - a[1])) console.log(`${s(ms)}  ${dir}`)
console.log(`== the ${top} slowest files`)
for (const f of files.sort((a, b) => (b.ms || 0) - (a.ms || 0)).slice(0, top)) console.log(`${s(f.ms)}  ${f.file}`)
