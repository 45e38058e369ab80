/**
 * @module stores/steps – store steps: the store work of several plugins, declared as data, run by
 * the store in one atomic batch (Redis: one Lua script, one round trip; in process: one loop).
 *
 * Rules of a batch (every backend):
 * - Steps run in order. A step with `max` refuses when its counter would pass it; a `claim` refuses
 *   when its key is held. The first refusal stops the batch and undoes every step it applied, in
 *   reverse (a counter it created is deleted, one it moved is moved back, a key it set is restored
 *   to its former value and expiry): a refused batch leaves the store as it found it.
 * - `committed` (when given) splits the batch in two, run one after the other in the same round
 *   trip: its first `committed` steps, then the rest only if they all applied. A refusal among the
 *   rest undoes the rest only: the first steps stay applied.
 * - `if` makes a step run only when the step at that index (earlier in the same batch) changed
 *   something (a claim won, a delIfValue deleted); a skipped step answers value 0.
 * - Each step answers `{ value, ttlMs }`: a counter its value after the step and its time to live;
 *   claim, set and delIfValue 1 when they changed the key, else 0.
 */
import type { BatchResult, InProcessKv, StepResult, StoreStep } from './kv.ts'

export type { BatchResult, StepResult, StepRunner, StoreStep } from './kv.ts'

/** The step with its key in the backend's naming. */
export function withKey (s: StoreStep, key: string): StoreStep {
  return { ...s, key }
}

/** How long a key an in-process undo restores lives (see runInProcess). */
const RESTORE_MS = 60_000
const SKIPPED: StepResult = Object.freeze({ value: 0, ttlMs: 0 })
const DONE: StepResult = Object.freeze({ value: 1, ttlMs: 0 })

/**
 * The batch on an in-process store: no other call runs between its steps, so it is atomic as the
 * Lua script is. A store error (a full store) undoes what the batch did and is thrown.
 */
export function runInProcess (fast: InProcessKv, steps: readonly StoreStep[], committed = 0): BatchResult {
  const results: StepResult[] = []
  const undo: Array<() => void> = []
  /** Undo entries below it belong to the committed steps, once those all applied. */
  let base = 0
  const rollback = (): void => { for (let i = undo.length - 1; i >= base; i--) { try { undo[i]() } catch {} } }
  try {
    for (let i = 0; i < steps.length; i++) {
      if (i === committed) base = undo.length
      const s = steps[i]
      if (s.if !== undefined && results[s.if]?.value !== 1) { results.push(SKIPPED); continue }
      if (s.op === 'incr') {
        const r = fast.incr(s.key, s.by, s.ttlMs)
        results.push({ value: r.value, ttlMs: r.resetMs })
        if (s.by !== 0) undo.push(() => { fast.incr(s.key, -s.by, s.ttlMs) })
        if (s.max !== undefined && r.value > s.max) { rollback(); return { refused: i, results } }
      } else if (s.op === 'claim') {
        const won = fast.setIfAbsent(s.key, s.value, s.ttlMs)
        results.push(won ? DONE : SKIPPED)
        if (!won) { rollback(); return { refused: i, results } }
        undo.push(() => { fast.delIfValue(s.key, s.value) })
      } else if (s.op === 'set') {
        const old = fast.get(s.key)
        fast.set(s.key, s.value, s.ttlMs)
        results.push(DONE)
        undo.push(() => { if (old === undefined) fast.delIfValue(s.key, s.value); else fast.set(s.key, old, s.ttlMs) })
      } else {
        const gone = fast.delIfValue(s.key, s.value)
        results.push(gone ? DONE : SKIPPED)
        // The in-process facet reads no expiry: a key deleted and then restored by an undo lives RESTORE_MS.
        if (gone) undo.push(() => { fast.setIfAbsent(s.key, s.value, RESTORE_MS) })
      }
    }
  } catch (err) {
    // A store error: nothing applied, the committed steps included.
    base = 0
    rollback()
    throw err
  }
  return { refused: undefined, results }
}

/**
 * The Redis batch: KEYS are the steps' keys in order; ARGV[1] the number of steps, then five
 * fields per step: op (i incr, c claim, s set, d delIfValue), value or amount, ttl ms, max ('' for
 * none), and the 1-based index of the step it depends on ('' for none); last, the number of
 * committed steps (0 for none; absent in an older caller's call). Answers {refused (0: none, else
 * the 1-based step), value1, ttl1, value2, ttl2, ...}.
 */
export const STEPS_LUA = `local n = tonumber(ARGV[1])
local committed = tonumber(ARGV[2 + 5 * n] or '0')
local out = {0}
local undo = {}
local base = 0
local function rollback()
  for j = #undo, base + 1, -1 do
    local u = undo[j]
    if u[1] == 'del' then redis.call('DEL', u[2])
    elseif u[1] == 'incr' then redis.call('INCRBY', u[2], u[3])
    else redis.call('SET', u[2], u[3], 'PX', u[4]) end
  end
end
for i = 1, n do
  if i == committed + 1 then base = #undo end
  local a = 1 + (i - 1) * 5
  local op, k, v, ttl, max, dep = ARGV[a + 1], KEYS[i], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
  if dep ~= '' and out[2 * tonumber(dep)] ~= 1 then
    out[2 * i] = 0; out[2 * i + 1] = 0
  elseif op == 'i' then
    local x = redis.call('INCRBY', k, v)
    local t = redis.call('PTTL', k)
    local created = t < 0 and x == tonumber(v)
    if t < 0 then redis.call('PEXPIRE', k, ttl); t = tonumber(ttl) end
    if created then undo[#undo + 1] = {'del', k}
    elseif tonumber(v) ~= 0 then undo[#undo + 1] = {'incr', k, -tonumber(v)} end
    out[2 * i] = x; out[2 * i + 1] = t
    if max ~= '' and x > tonumber(max) then out[1] = i; rollback(); return out end
  elseif op == 'c' then
    if redis.call('SET', k, v, 'PX', ttl, 'NX') then
      undo[#undo + 1] = {'del', k}
      out[2 * i] = 1; out[2 * i + 1] = 0
    else
      out[2 * i] = 0; out[2 * i + 1] = 0; out[1] = i; rollback(); return out
    end
  elseif op == 's' then
    local old = redis.call('GET', k)
    local oldt = redis.call('PTTL', k)
    redis.call('SET', k, v, 'PX', ttl)
    if old and oldt > 0 then undo[#undo + 1] = {'set', k, old, oldt} else undo[#undo + 1] = {'del', k} end
    out[2 * i] = 1; out[2 * i + 1] = 0
  else
    local old = redis.call('GET', k)
    if old == v then
      local oldt = redis.call('PTTL', k)
      redis.call('DEL', k)
      if oldt > 0 then undo[#undo + 1] = {'set', k, old, oldt} end
      out[2 * i] = 1
    else
      out[2 * i] = 0
    end
    out[2 * i + 1] = 0
  end
end
return out`

const OPS = { incr: 'i', claim: 'c', set: 's', delIfValue: 'd' } as const

/** The script's arguments for `steps` (keys already the backend's): [numkeys, ...keys, ...argv]. */
export function stepsArgs (steps: readonly StoreStep[], prefix: string, committed = 0): Array<string | number> {
  const keys: string[] = []
  const argv: Array<string | number> = [steps.length]
  for (const s of steps) {
    keys.push(prefix + s.key)
    const ms = 'ttlMs' in s ? Math.max(1, Math.ceil(s.ttlMs)) : 0
    argv.push(OPS[s.op], s.op === 'incr' ? s.by : s.value, ms, s.op === 'incr' && s.max !== undefined ? s.max : '', s.if === undefined ? '' : s.if + 1)
  }
  argv.push(committed)
  return [steps.length, ...keys, ...argv]
}

/** The script's answer as a BatchResult. */
export function parseSteps (raw: readonly unknown[], count: number): BatchResult {
  const refused = Number(raw[0])
  const results: StepResult[] = []
  const upTo = refused > 0 ? refused : count
  for (let i = 1; i <= upTo; i++) results.push({ value: Number(raw[2 * i - 1]), ttlMs: Math.max(0, Number(raw[2 * i])) })
  return { refused: refused > 0 ? refused - 1 : undefined, results }
}
