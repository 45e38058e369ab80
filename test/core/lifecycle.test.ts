/**
 * The call lifecycle's state machine (core/call/lifecycle.ts) alone: its transitions, who may
 * end a call in which state, the outcome facts and the counts shutdown waits for. Every way a call
 * ends through a listening gateway: lifecycle-chat-messages, lifecycle-responses and
 * lifecycle-count-tokens.
 */
import t from 'tap'
import pino from 'pino'
import { setTimeout as sleep } from 'node:timers/promises'
import { CALL_STATES, CallLifecycle, IllegalTransition, TRANSITIONS, type CallState, CallCounts } from '../../core/call/lifecycle.ts'
import { gwError } from '../../core/errors/errors.ts'

// ── the machine alone ────────────────────────────────────────────────────────────────────────

class Life extends CallLifecycle {
  readonly log = pino({ level: 'silent' })
  readonly counts = new CallCounts()
  settles = 0
  answeredHooks = 0
  aborts = 0
  /** Holds settle hooks open until released (to see the settling count). */
  gate: Promise<void> | undefined
  protected abortCall (): void { this.aborts++ }
  protected async runAnsweredHooks (): Promise<void> { this.answeredHooks++ }
  protected async runSettleHooks (): Promise<void> {
    this.settles++
    await this.gate
  }

  go (to: CallState): boolean { return this.move(to) }
  setRunning (p: Promise<void>): void { this.running = p }
}

/** A path from `connect` to each state. */
const PATH: Record<CallState, CallState[]> = {
  connect: [],
  authenticate: ['authenticate'],
  inspect: ['authenticate', 'inspect'],
  admit: ['authenticate', 'inspect', 'admit'],
  dispatch: ['authenticate', 'inspect', 'admit', 'dispatch'],
  responding: ['responding'],
  streaming: ['authenticate', 'inspect', 'admit', 'dispatch', 'streaming'],
  settled: ['settled'],
}

function lifeAt (state: CallState): Life {
  const l = new Life()
  for (const s of PATH[state]) l.go(s)
  return l
}

t.test('the machine: every legal move is taken, every illegal one throws, nothing leaves settled', async t => {
  for (const from of CALL_STATES) {
    for (const to of CALL_STATES) {
      const l = lifeAt(from)
      t.equal(l.state, from)
      if (from === 'settled') {
        t.equal(l.go(to), false, `settled → ${to} is ignored`)
        t.equal(l.state, 'settled')
      } else if (TRANSITIONS[from].includes(to)) {
        t.equal(l.go(to), true, `${from} → ${to}`)
        t.equal(l.state, to)
      } else {
        t.throws(() => l.go(to), IllegalTransition, `${from} → ${to} is illegal`)
        t.equal(l.state, from, 'and the call stays where it was')
      }
    }
  }
  t.same(TRANSITIONS.streaming, ['settled'], 'a stream only ends')
  t.same(TRANSITIONS.responding, ['settled'], 'a reply only ends')
})

t.test('the machine: finish settles once, whatever ends the call and however often', async t => {
  const l = lifeAt('dispatch')
  await Promise.all([l.finish(), l.finish(), l.responded(200), l.finish()])
  l.clientGone(new Error('gone'))
  l.responding(500)
  await l.finish()
  t.equal(l.settles, 1)
  t.equal(l.state, 'settled')
  t.equal(l.outcome.clientAborted, false, 'an end after the call settled changes nothing')
  t.equal(l.outcome.status, 200)
})

t.test('the machine: a client close ends the call only where nothing else will', async t => {
  for (const s of ['connect', 'authenticate', 'inspect', 'admit', 'responding'] as const) {
    const l = lifeAt(s)
    l.clientGone(new Error('gone'))
    await sleep(0)
    t.equal(l.settles, 1, `${s}: settled by the close`)
    t.equal(l.outcome.clientAborted, true)
    t.equal(l.aborts, 1, 'the call\'s I/O was aborted')
  }
  for (const s of ['dispatch', 'streaming'] as const) {
    const l = lifeAt(s)
    l.clientGone(new Error('gone'))
    l.clientGone(new Error('gone again'))
    await sleep(0)
    t.equal(l.settles, 0, `${s}: the dispatcher or the stream ends it`)
    t.equal(l.aborts, 1, 'aborted once')
    await l.finish()
    t.equal(l.settles, 1)
    t.equal(l.outcome.clientAborted, true)
  }
  // During a phase, settle waits for the plugin running now.
  const l = lifeAt('admit')
  let release!: () => void
  l.setRunning(new Promise<void>(resolve => { release = resolve }))
  l.clientGone(new Error('gone'))
  await sleep(5)
  t.equal(l.settles, 0, 'not while the phase runs')
  release()
  await sleep(5)
  t.equal(l.settles, 1, 'right after it')
  // A reply started for a client already gone ends the call at once.
  const r = lifeAt('dispatch')
  r.clientGone(new Error('gone'))
  r.responding(200)
  await sleep(0)
  t.equal(r.settles, 1)
})

t.test('the machine: outcome facts, answered once, and the counts shutdown waits for', async t => {
  const l = lifeAt('admit')
  t.equal(l.counts.inFlight, 0, 'not in flight before dispatch')
  l.dispatching()
  t.equal(l.counts.inFlight, 1)
  t.equal(l.phase, 'dispatch')
  l.accepted('up-chat')
  l.streaming()
  const usage = { inputTokens: 5, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 7 }
  await l.answered(usage, false)
  await l.answered(usage, false)
  t.equal(l.answeredHooks, 1, 'onAnswered once')
  t.equal(l.responded(200), undefined, 'a stream is not ended by fastify\'s onResponse')
  l.failed(gwError('GW_ERR_UPSTREAM_FAILED'))
  let open!: () => void
  l.gate = new Promise<void>(resolve => { open = resolve })
  const done = l.finish()
  t.equal(l.counts.settling, 1, 'settling counted while settle runs')
  t.equal(l.counts.inFlight, 1, 'still in flight until settled')
  t.equal(l.phase, 'settle')
  open()
  await done
  t.same({ inFlight: l.counts.inFlight, settling: l.counts.settling }, { inFlight: 0, settling: 0 })
  t.match(l.outcome, { status: 200, upstreamSucceeded: true, provider: 'up-chat', usage, usageEstimated: false, error: { code: 'GW_ERR_UPSTREAM_FAILED' } })
  await l.answered(usage, false)
  t.equal(l.answeredHooks, 1, 'never after settle')
})

t.test('the machine: once settled, no writer changes the outcome settle got', async t => {
  const usage = { inputTokens: 5, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 7 }
  const l = lifeAt('dispatch')
  await l.finish()
  const before = structuredClone(l.outcome)
  t.same(before, { status: 200, usageEstimated: false, upstreamSucceeded: false, clientAborted: false })
  l.accepted('late-provider')
  l.used(usage, true)
  await l.answered(usage, true)
  l.failed(gwError('GW_ERR_UPSTREAM_FAILED'))
  l.clientGone(new Error('gone'))
  l.responding(502)
  l.streaming()
  await l.responded(500)
  t.same(l.outcome, before, 'accepted, used, answered, failed, clientGone, responding, streaming and responded all refused')
  t.equal(l.answeredHooks, 0)
  t.equal(l.settles, 1)
  t.equal(l.state, 'settled')
  // A settled stream, too: what a stream's unwinding reports after a cut settled it changes nothing.
  const s = lifeAt('streaming')
  s.used(usage, true)
  await s.finish()
  s.used({ ...usage, outputTokens: 99 }, false)
  s.accepted('late')
  t.same(s.outcome.usage, usage)
  t.equal(s.outcome.usageEstimated, true)
  t.equal(s.outcome.provider, undefined)
})

t.test('CallCounts: a config version\'s counts add to the app\'s total, change by change', async t => {
  const total = new CallCounts()
  const a = new CallCounts(total)
  const b = new CallCounts(total)
  a.requestOpened(); a.dispatched(); b.requestOpened(); b.dispatched(); b.settleStarted()
  t.same([total.open, total.inFlight, total.settling], [2, 2, 1], 'the total sees both versions')
  t.same([a.inFlight, a.settling, b.inFlight, b.settling], [1, 0, 1, 1], 'each version only its own')
  b.settleEnded(true); b.requestClosed()
  t.ok(b.idle, 'a version whose calls all ended is idle (it may be retired)')
  t.notOk(a.idle)
  t.same([total.open, total.inFlight, total.settling], [1, 1, 0])
  a.settleStarted(); a.settleEnded(false)
  t.equal(a.inFlight, 1, 'a settle of a call never dispatched leaves the flight count alone')
})
