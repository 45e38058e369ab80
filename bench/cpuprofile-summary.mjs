// Reads a V8 .cpuprofile (node --cpu-prof) and sums self time per function.
// CLI: node bench/cpuprofile-summary.mjs <file.cpuprofile> [top=30] [skipMs=0]   (skipMs: leave out the first samples, e.g. start-up)
import { readFileSync, realpathSync } from 'node:fs'
import { resolve, dirname, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** Where a script URL lives: a gateway source file, a package, or node itself. */
function place (url, base) {
  if (!url) return { where: '(native / VM)', area: 'V8 / native' }
  if (url.startsWith('node:')) return { where: url, area: 'node internals' }
  const path = url.startsWith('file://') ? fileURLToPath(url) : url
  const nm = path.lastIndexOf('/node_modules/')
  if (nm >= 0) {
    const parts = path.slice(nm + 14).split('/')
    const pkg = parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]
    return { where: `${pkg}/${parts.slice(pkg.split('/').length).join('/')}`, area: pkg }
  }
  const rel = relative(base, path)
  if (!rel.startsWith('..')) {
    const top = rel.split('/')[rel.startsWith('dist/') ? 1 : 0]
    return { where: rel, area: ['core', 'plugins', 'providers', 'server.js', 'cli'].includes(top) ? 'gateway code' : rel }
  }
  return { where: path, area: 'other' }
}

export function summarize (profile, { root: base = root, top = 30, skipMs = 0 } = {}) {
  const byId = new Map(profile.nodes.map(n => [n.id, n]))
  const self = new Map()
  const { samples, timeDeltas } = profile
  // timeDeltas[i] is the time since the previous sample: it belongs to the sample before it.
  let t = 0
  for (let i = 0; i < samples.length; i++) {
    t += timeDeltas[i] / 1000
    if (t < skipMs) continue
    const dt = (timeDeltas[i + 1] ?? 0) / 1000
    self.set(samples[i], (self.get(samples[i]) ?? 0) + dt)
  }
  const fns = new Map()
  let totalMs = 0
  let idleMs = 0
  for (const [id, ms] of self) {
    const n = byId.get(id)
    const cf = n.callFrame
    totalMs += ms
    if (cf.functionName === '(idle)') { idleMs += ms; continue }
    const name = cf.functionName || '(anonymous)'
    const { where, area } = place(cf.url, base)
    const key = `${name}\0${where}\0${cf.lineNumber}`
    const e = fns.get(key) ?? { name, where: cf.url ? `${where}:${cf.lineNumber + 1}` : where, area: name.startsWith('(') && !cf.url ? name : area, selfMs: 0 }
    e.selfMs += ms
    fns.set(key, e)
  }
  const busyMs = totalMs - idleMs
  const list = [...fns.values()].sort((a, b) => b.selfMs - a.selfMs)
  for (const e of list) e.pct = 100 * e.selfMs / busyMs
  const areas = new Map()
  for (const e of list) areas.set(e.area, (areas.get(e.area) ?? 0) + e.selfMs)
  const byArea = [...areas].map(([area, ms]) => ({ area, ms, pct: 100 * ms / busyMs })).sort((a, b) => b.ms - a.ms).slice(0, 10)
  return { totalMs, busyMs, idleMs, top: list.slice(0, top), byArea }
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = process.argv[2]
  if (!file) { process.stderr.write('usage: node bench/cpuprofile-summary.mjs <file.cpuprofile> [top]\n'); process.exit(2) }
  const s = summarize(JSON.parse(readFileSync(file, 'utf8')), { top: Number(process.argv[3] ?? 30), skipMs: Number(process.argv[4] ?? 0) })
  process.stdout.write(`sampled ${s.totalMs.toFixed(0)} ms, busy ${s.busyMs.toFixed(0)} ms (${(100 * s.busyMs / s.totalMs).toFixed(1)} %)\n\nby area:\n`)
  for (const a of s.byArea) process.stdout.write(`  ${a.pct.toFixed(1).padStart(5)} %  ${a.ms.toFixed(0).padStart(7)} ms  ${a.area}\n`)
  process.stdout.write('\ntop functions by self time:\n')
  for (const e of s.top) process.stdout.write(`  ${e.pct.toFixed(1).padStart(5)} %  ${e.selfMs.toFixed(1).padStart(8)} ms  ${e.name}  (${e.where})\n`)
}
