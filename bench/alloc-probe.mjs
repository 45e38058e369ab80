// Preloaded into the gateway by bench/alloc.mjs (node --expose-gc --import bench/alloc-probe.mjs):
// measures the JavaScript heap allocated, the garbage collections and the CPU time of this process
// between two IPC messages, 'start' and 'stop'.
//
// Bytes allocated = the growth of the used heap between collections, summed: a full GC at 'start'
// (baseline: used heap after it), then for every GC that v8.GCProfiler records until the full GC
// forced at 'stop', (used heap before that GC − used heap after the previous one). Exact for the V8
// heap (every space, large objects included) whatever the GCs in between did; it leaves out memory
// outside the V8 heap (Buffer backing stores, native allocations of SQLite and llhttp).
import v8 from 'node:v8'
import { Session } from 'node:inspector'
import { writeFileSync } from 'node:fs'

// ALLOC_PROFILE=<file>: also a sampling allocation profile (every object allocated, collected or
// not) written there at 'stop', for `node bench/alloc.mjs --profile` (top allocating functions).
const profileFile = process.env.ALLOC_PROFILE
let inspector
const post = (method, params) => new Promise((res, rej) => inspector.post(method, params, (err, r) => err ? rej(err) : res(r)))

let session

process.on('message', msg => {
  if (msg?.type === 'start') {
    globalThis.gc()
    const profiler = new v8.GCProfiler()
    const base = v8.getHeapStatistics().used_heap_size
    profiler.start()
    session = { profiler, base, cpu: process.cpuUsage() }
    if (profileFile) {
      if (!inspector) { inspector = new Session(); inspector.connect() }
      void post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
        .then(() => process.send({ type: 'started' }))
    } else process.send({ type: 'started' })
  } else if (msg?.type === 'stop' && session) {
    const cpu = process.cpuUsage(session.cpu)
    globalThis.gc()
    const { statistics } = session.profiler.stop()
    let prev = session.base
    let bytes = 0
    const gcs = { scavenge: 0, markSweep: 0, other: 0, pauseUs: 0, maxPauseUs: 0 }
    for (const [i, s] of statistics.entries()) {
      bytes += s.beforeGC.heapStatistics.usedHeapSize - prev
      prev = s.afterGC.heapStatistics.usedHeapSize
      if (i === statistics.length - 1) continue // the GC forced here, not one the calls caused
      if (s.gcType === 'Scavenge' || s.gcType === 'MinorMarkSweep') gcs.scavenge++
      else if (s.gcType === 'MarkSweepCompact') gcs.markSweep++
      else gcs.other++
      gcs.pauseUs += s.cost
      if (s.cost > gcs.maxPauseUs) gcs.maxPauseUs = s.cost
    }
    session = undefined
    const reply = { type: 'stopped', bytes, cpuUs: cpu.user + cpu.system, gcs }
    if (profileFile) {
      void post('HeapProfiler.stopSampling').then(({ profile }) => {
        writeFileSync(profileFile, JSON.stringify(profile))
        process.send(reply)
      })
    } else process.send(reply)
  }
})
