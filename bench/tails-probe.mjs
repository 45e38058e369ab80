// Preloaded into a gateway (or the bare proxy) by bench/tails.mjs: between the IPC messages
// 'start' and 'stop' it records the event-loop delay histogram (perf_hooks.monitorEventLoopDelay,
// 1 ms resolution: how late timers and I/O callbacks ran, i.e. how long the loop was blocked),
// every garbage collection (PerformanceObserver 'gc': kind and pause), and, in a gateway, every
// ledger charge batch the SQLite ledger committed on the loop (ledger/batch.ts onChargeBatch).
import { monitorEventLoopDelay, PerformanceObserver, constants } from 'node:perf_hooks'
import { existsSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { join } from 'node:path'

const KINDS = { [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge', [constants.NODE_PERFORMANCE_GC_MAJOR]: 'markSweep', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak' }

let session
const batchModule = join(process.cwd(), 'dist/core/ledger/batch.js')
/**
 * Listens to the batches of every charge batcher in the process. Batch listeners belong to each
 * batcher (its ledger's), which this preloaded module cannot reach: each batcher is given the
 * listener the first time it queues a charge (ChargeBatcher#enqueue, which every charge goes
 * through). Returns the function that stops listening.
 */
const onChargeBatch = await (async () => {
  if (!existsSync(batchModule) || process.env.TAILS_BATCHES !== '1') return undefined
  const { ChargeBatcher } = await import(pathToFileURL(batchModule).href)
  let current
  const joined = new WeakSet()
  const enqueue = ChargeBatcher.prototype.enqueue
  ChargeBatcher.prototype.enqueue = function (charge) {
    if (!joined.has(this)) {
      joined.add(this)
      this.onBatch((size, ms, ok) => current?.(size, ms, ok))
    }
    return enqueue.call(this, charge)
  }
  return listener => {
    current = listener
    return () => { current = undefined }
  }
})()

process.on('message', msg => {
  if (msg?.type === 'start') {
    const eld = monitorEventLoopDelay({ resolution: 1 })
    const gcs = []
    const batches = []
    const obs = new PerformanceObserver(list => { for (const e of list.getEntries()) gcs.push({ kind: KINDS[e.detail?.kind ?? e.kind] ?? 'other', ms: e.duration, at: e.startTime }) })
    obs.observe({ entryTypes: ['gc'] })
    const stopBatches = onChargeBatch?.((size, ms, ok) => batches.push({ size, ms, ok, at: performance.now() }))
    eld.enable()
    session = { eld, gcs, batches, obs, stopBatches, t0: performance.now(), cpu: process.cpuUsage() }
    process.send({ type: 'started' })
  } else if (msg?.type === 'stop' && session) {
    const { eld, gcs, batches, obs, stopBatches, t0, cpu } = session
    eld.disable()
    obs.disconnect()
    stopBatches?.()
    session = undefined
    const ns = q => eld.percentile(q) / 1e6
    process.send({
      type: 'stopped',
      wallMs: performance.now() - t0,
      cpuMs: (c => (c.user + c.system) / 1000)(process.cpuUsage(cpu)),
      eld: { p50: ns(50), p90: ns(90), p99: ns(99), p999: ns(99.9), max: eld.max / 1e6, mean: eld.mean / 1e6, count: eld.count },
      gcs,
      batches,
      heapUsedMb: process.memoryUsage().heapUsed / 2 ** 20,
    })
  }
})
