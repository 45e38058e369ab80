/**
 * @module ledger/spool – charges the ledger could not write, kept in a local append-only file
 * (fsync'd) and written again in the background until they commit.
 *
 * A settled call's charge that still fails after its quick retries is appended here, one JSON
 * line per charge holding everything `Wallet.charge` needs (the reservation and the usage record),
 * and fsync'd before `add` returns. A timer replays the spool every `retryMs` while it holds
 * anything; a charge that commits leaves it, and the file is rewritten (a new file, fsync'd, then
 * renamed over the old one) with what is left, or removed once empty. Replaying is safe any number
 * of times: the ledger keeps one usage record per trace id and a charge whose record is already
 * there changes nothing, so a charge that committed just before a crash, and was replayed again
 * after it, is charged once.
 *
 * While a charge is spooled its money keeps counting against the organization: its hold stays in
 * place until the replayed charge drops it (on start-up, a spool written by an earlier process of
 * an in-process ledger (SQLite memory reservations) is held again). `blocked` tells admission to
 * fail closed: charges are failing (a charge was given up to the spool, and since then nothing
 * committed and the ledger's probe fails) or the spool holds more than `maxCharges`. A spooled
 * charge the ledger refuses while it works (a record it rejects) stays in the spool, counted
 * against that bound, without keeping admission closed.
 *
 * One process owns a spool file: `<path>.lock` holds its pid while the file exists. The admin CLI
 * reads a spool freely and replays one only when no live process owns it.
 */
import { closeSync, existsSync, fstatSync, fsyncSync, ftruncateSync, openSync, renameSync, unlinkSync, writeFileSync, writeSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import type { Logger } from 'pino'
import type { Micros, Reservation, UsageRecord, Wallet } from './ledger.ts'
import { fsyncDir, readSpool, spoolOwner, summarize, SpoolOwnedError, type SpooledCharge, type SpoolSummary } from './spool-file.ts'

export { readSpool, spoolOwner, summarize, SpoolOwnedError } from './spool-file.ts'
export type { SpooledCharge, SpoolSummary } from './spool-file.ts'

/** What the spool needs of the ledger: the wallet, and where its holds live. */
export type SpoolLedger = Wallet & { readonly holdsInProcess?: boolean }

export interface ChargeSpoolOptions {
  /** More spooled charges than this close admission (default 1000). */
  maxCharges?: number
  /** How often the spool is replayed while it holds anything (ms, default 1000). */
  retryMs?: number
  log?: Logger
  now?: () => number
}

/** A charge in the spool, as this process knows it. */
interface Entry {
  charge: SpooledCharge
  /** The hold the charge drops: the call's own, or one the ledger stores. */
  reservation: Reservation | undefined
  /**
   * A hold taken again at load for a charge of an earlier process (in-process ledger): released
   * here once the charge committed, not by the charge, since the charge may find its record there
   * already (then the ledger drops nothing).
   */
  rehold?: Reservation
  /** Told once the charge committed (a lease shrinks by its cost). */
  after?: () => void
}

export class ChargeSpool {
  readonly #ledger: SpoolLedger
  readonly #maxCharges: number
  readonly #retryMs: number
  readonly #log: Logger | undefined
  readonly #now: () => number
  readonly #entries = new Set<Entry>()
  /** Lines of the file that are not a charge: kept as they are. */
  #unreadable: string[] = []
  #fd: number | undefined = undefined
  #locked = false
  #failing = false
  #timer: NodeJS.Timeout | undefined = undefined
  #replaying: Promise<void> | undefined = undefined
  #closed = false
  /** Σ cost of what is spooled. */
  #total = 0
  /** The outcome last logged by a replay (see #replayOnce). */
  #logged = ''

  readonly path: string
  constructor (path: string, ledger: SpoolLedger, opts: ChargeSpoolOptions = {}) {
    this.path = path; this.#ledger = ledger
    this.#maxCharges = opts.maxCharges ?? 1000
    this.#retryMs = opts.retryMs ?? 1000
    this.#log = opts.log; this.#now = opts.now ?? Date.now
  }

  /** Charges spooled and not committed yet. */
  get size (): number { return this.#entries.size }

  /** Σ cost of the spooled charges (micro-units). */
  get total (): Micros { return this.#total }

  /** true from a charge given up to the spool until a charge commits again. */
  get failing (): boolean { return this.#failing }

  /** Admission must fail closed: charges are failing, or the spool holds more than its bound. */
  get blocked (): boolean { return this.#failing || this.#entries.size > this.#maxCharges }

  /** Seconds a refused client should wait (Retry-After): one replay period, at least 1. */
  get retryAfterSeconds (): number { return Math.max(1, Math.ceil(this.#retryMs / 1000)) }

  summary (): SpoolSummary {
    return summarize([...this.#entries].map(e => e.charge), this.#unreadable.length)
  }

  /**
   * Start-up: loads what an earlier process left (its holds taken again on an in-process ledger)
   * and replays it once. Throws when another live process owns the file.
   */
  async open (): Promise<void> {
    if (!existsSync(this.path)) return
    this.#lock()
    const { charges, unreadable, torn } = readSpool(this.path)
    this.#unreadable = unreadable
    for (const charge of charges) {
      if (this.#ledger.holdsInProcess) this.#entries.add({ charge, reservation: undefined, rehold: this.#holdAgain(charge) })
      else this.#entries.add({ charge, reservation: charge.reservation ?? undefined })
    }
    this.#total = charges.reduce((s, c) => s + c.record.cost, 0)
    if (torn || charges.length === 0) this.#rewrite()
    if (this.#entries.size === 0) return
    this.#log?.warn({ spool: this.path, ...this.summary() }, 'ledger: replaying the charges an earlier run spooled')
    await this.replay()
  }

  /**
   * A charge loaded from the file whose hold was in another process's memory (gone): the hold is
   * taken again here so that the money keeps counting until the charge commits. (A hold stored in
   * the ledger, a file's reserved column or a PostgreSQL row, is the one the charge drops.)
   */
  #holdAgain (c: SpooledCharge): Reservation | undefined {
    const org = c.record.organization
    const now = this.#ledger.inProcess
    if (!org || !(c.record.cost > 0) || now === undefined) return undefined
    try {
      return now.resize({ id: `spool-${c.record.traceId}`, organization: org, amount: 0 }, c.record.cost)
    } catch {
      return undefined
    }
  }

  /**
   * Spools a charge the ledger would not take (fsync'd before this returns) and closes admission
   * until a charge commits. false when it could not be written (the caller logs the record).
   * `after` runs once the charge committed.
   */
  add (reservation: Reservation | undefined, record: UsageRecord, after?: () => void): boolean {
    this.#failing = true
    const charge: SpooledCharge = { spooledAt: this.#now(), reservation: reservation ?? null, record }
    let before: number | undefined
    try {
      this.#lock()
      if (this.#fd === undefined) {
        mkdirSync(dirname(this.path), { recursive: true })
        const created = !existsSync(this.path)
        this.#fd = openSync(this.path, 'a')
        if (created) fsyncDir(dirname(this.path))
      }
      before = fstatSync(this.#fd).size
      writeSync(this.#fd, JSON.stringify(charge) + '\n')
      fsyncSync(this.#fd)
    } catch (err) {
      // A line written in part would run into the next one: cut it off again.
      if (this.#fd !== undefined && before !== undefined) try { ftruncateSync(this.#fd, before) } catch { /* read back as a torn line */ }
      this.#log?.error({ err, spool: this.path }, 'ledger: cannot write the charge spool')
      return false
    }
    this.#entries.add({ charge, reservation, after })
    this.#total += record.cost
    this.#schedule()
    return true
  }

  /** A charge committed: the ledger writes again, so admission reopens and the spool is replayed now. */
  committed (): void {
    if (!this.#failing) return
    this.#failing = false
    if (this.#entries.size > 0 && !this.#closed) void this.replay()
  }

  /** Writes every spooled charge again; those that commit leave the spool. Never rejects. */
  replay (): Promise<void> {
    this.#replaying ??= this.#replayOnce().finally(() => { this.#replaying = undefined })
    return this.#replaying
  }

  async #replayOnce (): Promise<void> {
    const batch = [...this.#entries]
    if (batch.length === 0) return
    // Every charge at once: the ledger batches them into a few transactions.
    const results = await Promise.allSettled(batch.map(e => this.#ledger.charge(e.reservation, e.charge.record)))
    let committed = 0
    let error: unknown
    for (let i = 0; i < batch.length; i++) {
      const r = results[i]!
      if (r.status === 'rejected') {
        error ??= r.reason
        continue
      }
      const e = batch[i]!
      this.#entries.delete(e)
      this.#total -= e.charge.record.cost
      committed++
      if (e.rehold) {
        try { this.#ledger.inProcess?.release(e.rehold) } catch { /* in memory: cannot fail */ }
      }
      try { e.after?.() } catch { /* a listener's failure is not the charge's */ }
    }
    // A charge that fails while the ledger works (it commits others, or answers its probe) failed
    // for itself (a record it rejects): it stays in the spool, counted against the bound, but does
    // not keep admission closed.
    this.#failing = error !== undefined && committed === 0 && !await this.#ledger.ping().catch(() => false)
    // Logged when the state changes, not at every replay of a spool that stays as it is.
    const state = error === undefined ? '' : `${this.#failing ? 'failing' : 'refused'}:${this.#entries.size}`
    const changed = state !== this.#logged
    this.#logged = state
    if (changed && error !== undefined && !this.#failing) this.#log?.error({ err: error, spool: this.path, left: this.#entries.size },
      'ledger: the ledger works but refuses spooled charge(s); they stay in the spool (admin spool show) until it takes them')
    if (committed > 0) {
      try {
        this.#rewrite()
      } catch (err) {
        // The file still lists them: replaying them again changes nothing (one record per trace id).
        this.#log?.warn({ err, spool: this.path }, 'ledger: could not rewrite the charge spool; committed charges stay in it until the next replay')
      }
      this.#log?.info({ spool: this.path, committed, left: this.#entries.size }, 'ledger: spooled charges committed')
    }
    if (changed && this.#failing) this.#log?.warn({ err: error, spool: this.path, left: this.#entries.size }, 'ledger: spooled charges still cannot be written; retrying')
    this.#schedule()
  }

  #schedule (): void {
    if (this.#closed || this.#entries.size === 0 || this.#timer !== undefined) return
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      void this.replay()
    }, this.#retryMs)
    this.#timer.unref()
  }

  /** The file with what is left (fsync'd, renamed over the old one), or no file when nothing is. */
  #rewrite (): void {
    if (this.#fd !== undefined) {
      closeSync(this.#fd)
      this.#fd = undefined
    }
    const dir = dirname(this.path)
    if (this.#entries.size === 0 && this.#unreadable.length === 0) {
      try { unlinkSync(this.path) } catch (err) { if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err }
      fsyncDir(dir)
      this.#unlock()
      return
    }
    const lines = [...this.#unreadable, ...[...this.#entries].map(e => JSON.stringify(e.charge))]
    const tmp = `${this.path}.tmp`
    const fd = openSync(tmp, 'w')
    try {
      writeSync(fd, lines.join('\n') + '\n')
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, this.path)
    fsyncDir(dir)
  }

  #lock (): void {
    if (this.#locked) return
    const owner = spoolOwner(this.path)
    if (owner !== undefined) throw new SpoolOwnedError(this.path, owner)
    mkdirSync(dirname(this.path), { recursive: true })
    writeFileSync(`${this.path}.lock`, `${process.pid}\n`)
    this.#locked = true
  }

  #unlock (): void {
    if (!this.#locked) return
    this.#locked = false
    try { unlinkSync(`${this.path}.lock`) } catch { /* gone already */ }
  }

  /** Stops the timer and tries one last replay; what still fails stays in the file for the next start. */
  async close (): Promise<void> {
    this.#closed = true
    clearTimeout(this.#timer)
    this.#timer = undefined
    await this.#replaying
    if (this.#entries.size > 0) await this.replay()
    clearTimeout(this.#timer)
    if (this.#fd !== undefined) {
      closeSync(this.#fd)
      this.#fd = undefined
    }
    // The owner goes: the next process (or the admin CLI) takes the file over.
    this.#unlock()
    if (this.#entries.size > 0) this.#log?.warn({ spool: this.path, ...this.summary() }, 'ledger: charges left in the spool; they are replayed at the next start')
  }
}
