/**
 * @module ledger/checkpoint – WAL checkpoints of the SQLite ledger, off the event loop.
 *
 * In WAL mode with `synchronous = NORMAL` a commit only appends to the WAL file; the cost comes
 * every ~1000 pages, when the committing connection copies the WAL back into the database file
 * and fsyncs both (an automatic checkpoint). On the event loop that is a stall of several to tens
 * of milliseconds for every call in flight. Here the gateway's connection does no automatic
 * checkpoints; a worker thread with its own connection to the file runs a PASSIVE checkpoint
 * (it never blocks the writer) after enough commits or a short while, one at a time. The last
 * connection to close (the gateway's, after the worker's) checkpoints what is left.
 */
import { Worker } from 'node:worker_threads'
import { createRequire } from 'node:module'

/** The worker: one connection, a PASSIVE checkpoint per message, closed on 'close'. */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.module)
const db = new Database(workerData.path)
db.pragma('busy_timeout = 5000')
parentPort.on('message', m => {
  if (m === 'close') { db.close(); parentPort.close(); return }
  let error
  try { db.pragma('wal_checkpoint(PASSIVE)') } catch (err) { error = String(err && err.message || err) }
  parentPort.postMessage({ done: true, error })
})
`

export interface CheckpointOptions {
  /** Commits after which a checkpoint is started (default 50, about 1000 WAL pages of charges). */
  everyCommits?: number
  /** Longest time a committed change waits for its checkpoint (ms, default 500). */
  maxDelayMs?: number
  /** Told of a checkpoint that failed (it is retried with the next one). */
  onError?: (message: string) => void
  /** The worker could not run (it is gone): the caller checkpoints itself again. */
  onFailed?: (err: Error) => void
}

export class Checkpointer {
  readonly #worker: Worker
  readonly #every: number
  #commits = 0
  #running = false
  #timer: NodeJS.Timeout | undefined = undefined
  #closed: Promise<void> | undefined = undefined
  readonly #delayMs: number
  readonly #onError: (message: string) => void
  #exited = false
  /** Checkpoints finished (tests). */
  done = 0

  constructor (path: string, opts: CheckpointOptions = {}) {
    this.#every = opts.everyCommits ?? 50
    this.#delayMs = opts.maxDelayMs ?? 500
    this.#onError = opts.onError ?? (() => {})
    const module = createRequire(import.meta.url).resolve('better-sqlite3')
    this.#worker = new Worker(WORKER, { eval: true, workerData: { path, module }, resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1, codeRangeSizeMb: 2, stackSizeMb: 1 } })
    this.#worker.unref()
    this.#worker.on('message', (m: { done?: boolean, error?: string }) => {
      if (!m?.done) return
      this.#running = false
      this.done++
      if (m.error !== undefined) this.#onError(m.error)
      if (this.#commits >= this.#every) this.#start()
    })
    this.#worker.once('exit', () => { this.#exited = true })
    this.#worker.on('error', err => {
      this.#closed ??= Promise.resolve()
      clearTimeout(this.#timer)
      opts.onFailed?.(err)
    })
  }

  /** One more commit in the WAL: a checkpoint starts after enough of them, or soon after the first. */
  committed (): void {
    if (this.#closed) return
    this.#commits++
    if (this.#commits >= this.#every) this.#start()
    else if (this.#timer === undefined && !this.#running) {
      this.#timer = setTimeout(() => { this.#timer = undefined; this.#start() }, this.#delayMs)
      this.#timer.unref()
    }
  }

  #start (): void {
    if (this.#running || this.#commits === 0 || this.#closed) return
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#running = true
    this.#commits = 0
    this.#worker.postMessage('check')
  }

  /** Waits for a checkpoint under way, then closes the worker's connection and ends it. */
  close (): Promise<void> {
    this.#closed ??= (async () => {
      clearTimeout(this.#timer)
      if (this.#exited) return
      // Held open while it finishes: an unref'd worker would not keep the process waiting for it.
      this.#worker.ref()
      const exited = new Promise<void>(resolve => this.#worker.once('exit', () => resolve()))
      this.#worker.postMessage('close')
      await exited
    })()
    return this.#closed
  }
}
