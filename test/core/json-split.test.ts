/**
 * parseSplit (large bodies parsed piece by piece, so that no string above V8's large-object size
 * is made) gives exactly what JSON.parse of the whole text gives, key order and own "__proto__"
 * keys included, and refuses exactly the texts JSON.parse refuses: over many generated documents
 * with every kind of value, escape, whitespace and non-ASCII text, parsed with pieces down to one
 * byte so that every level is walked, and over many of their mutations (bytes dropped, doubled or
 * replaced by structural ones).
 */
import t from 'tap'
import { parseSplit } from '../../core/http/json-split.ts'
import { scanBody } from '../../core/http/body-scan.ts'
import { isUtf8 } from 'node:buffer'
import { mulberry32 as rng } from '../helpers/rng.ts'

const WS = [' ', '\n', '\r', '\t', '', '', '']
const KEYS = ['model', 'messages', 'a', '__proto__', 'constructor', 'toString', '0', '1', '10', '-1', 'é', '😀', 'k"q', 'k\\b', '', 'model']
const STRINGS = ['', 'plain', 'héllo — “quoted”', '编码代理', '😀🎉', 'quote " and \\ backslash', 'line\nbreak\ttab', '\u0000\u001f', '\u2028\u2029', '\ud800', '"}]', '[{', '\\']

function pick<T> (r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)]
}

/** A JSON string literal, sometimes with escapes written differently from JSON.stringify's. */
function str (r: () => number, s: string): string {
  const enc = JSON.stringify(s)
  if (r() < 0.3) return enc.replace(/[a-z]/g, c => r() < 0.2 ? '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0') : c)
  if (r() < 0.1) return enc.replace(/\//g, '\\/')
  return enc
}

function ws (r: () => number): string {
  return pick(r, WS) + (r() < 0.1 ? pick(r, WS) : '')
}

/** A random JSON text (not always canonical), up to `depth` containers deep. */
function gen (r: () => number, depth: number): string {
  const k = r()
  if (depth > 0 && k < 0.3) {
    const n = Math.floor(r() * 6)
    const members: string[] = []
    for (let i = 0; i < n; i++) members.push(ws(r) + str(r, pick(r, KEYS)) + ws(r) + ':' + ws(r) + gen(r, depth - 1) + ws(r))
    return '{' + (n === 0 ? ws(r) : members.join(',')) + '}'
  }
  if (depth > 0 && k < 0.55) {
    const n = Math.floor(r() * 6)
    const items: string[] = []
    for (let i = 0; i < n; i++) items.push(ws(r) + gen(r, depth - 1) + ws(r))
    return '[' + (n === 0 ? ws(r) : items.join(',')) + ']'
  }
  if (k < 0.8) {
    const base = pick(r, STRINGS)
    return str(r, r() < 0.2 ? base.repeat(1 + Math.floor(r() * 40)) : base)
  }
  return pick(r, ['0', '-0', '1', '-12.5e3', '1E+2', '0.000001', '123456789012345678901234567890', 'true', 'false', 'null'])
}

/** A text as printable ASCII (a raw U+2028 would break the TAP stream), cut short. */
function show (text: string): string {
  return JSON.stringify(text.slice(0, 400)).replace(/[^\x20-\x7e]/g, c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
}

type Outcome = { ok: true, value: unknown } | { ok: false }

function whole (text: string): Outcome {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

function split (text: string, piece: number): Outcome {
  const b = Buffer.from(text, 'utf8')
  const spans: number[] = []
  if (scanBody(b, 1000, spans, Infinity).tooDeep) throw new Error('unexpected depth')
  try {
    return { ok: true, value: parseSplit(b, spans, piece) }
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err
    return { ok: false }
  }
}

/** Deep equality that also compares key order and own "__proto__" keys, which t.same does not see. */
function sameShape (a: unknown, b: unknown): boolean {
  if (typeof a !== typeof b) return false
  if (a === null || typeof a !== 'object') return Object.is(a, b)
  if (b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false
  const ka = Reflect.ownKeys(a)
  const kb = Reflect.ownKeys(b as object)
  if (ka.length !== kb.length) return false
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] !== kb[i]) return false
    const da = Object.getOwnPropertyDescriptor(a, ka[i])!
    const db = Object.getOwnPropertyDescriptor(b, kb[i])!
    if (da.enumerable !== db.enumerable || da.writable !== db.writable || da.configurable !== db.configurable) return false
    if (!sameShape(da.value, db.value)) return false
  }
  return true
}

function agree (text: string, piece: number): boolean {
  const w = whole(text)
  const s = split(text, piece)
  if (!w.ok || !s.ok) return w.ok === s.ok
  return sameShape(w.value, s.value)
}

t.test('documents: the same value as JSON.parse, at every piece size', async t => {
  const r = rng(1)
  let checked = 0
  for (let i = 0; i < 3000; i++) {
    const text = ws(r) + gen(r, 1 + Math.floor(r() * 5)) + ws(r)
    if (!isUtf8(Buffer.from(text))) continue // lone surrogates encode as U+FFFD: still valid UTF-8
    for (const piece of [1, 7, 40, 1000]) {
      if (!agree(text, piece)) {
        t.fail(`piece ${piece}: ${show(text)}`)
        return
      }
      checked++
    }
  }
  t.ok(checked > 10_000, `${checked} parses agreed`)
  // The cases that matter most, spelled out.
  const proto = split('{"__proto__":{"polluted":1},"a":[1,2]}', 1)
  t.ok(proto.ok && Object.getPrototypeOf(proto.value) === Object.prototype, 'an own "__proto__" key does not set the prototype')
  t.ok(proto.ok && Object.hasOwn(proto.value as object, '__proto__'))
  t.same(Object.keys((split('{"b":1,"a":2,"b":3,"2":4,"1":5}', 1) as { value: object }).value), ['1', '2', 'b', 'a'], 'integer keys first, then the first place of a duplicate')
  t.same((split('{"b":1,"b":[3]}', 1) as { value: { b: unknown } }).value.b, [3], 'the last duplicate wins')
})

t.test('mutated documents: refused exactly when JSON.parse refuses them', async t => {
  const r = rng(2)
  const STRUCTURAL = ['{', '}', '[', ']', ',', ':', '"', '\\', ' ', '0', 'x', '\u00e9']
  let refused = 0
  let total = 0
  for (let i = 0; i < 4000; i++) {
    const text = gen(r, 2 + Math.floor(r() * 4))
    const chars = [...text]
    const at = Math.floor(r() * (chars.length + 1))
    const op = r()
    if (op < 0.35) chars.splice(at, 1)
    else if (op < 0.6) chars.splice(at, 0, chars[at] ?? '}')
    else chars.splice(at, 1, pick(r, STRUCTURAL))
    const mutated = chars.join('') + (r() < 0.05 ? ',' : '')
    if (!isUtf8(Buffer.from(mutated))) continue
    for (const piece of [1, 5, 64]) {
      total++
      if (!whole(mutated).ok) refused++
      if (!agree(mutated, piece)) {
        t.fail(`piece ${piece}: ${show(mutated)}`)
        return
      }
    }
  }
  t.ok(refused > total / 4, `${refused} of ${total} mutated texts refused by both`)
  for (const bad of ['{"a":1,}', '[1,]', '{"a" 1}', '{"a":1 "b":2}', '{,}', '[,1]', '{"a":1}}', '[1]]', '{"a":[1}', '[{"a":1]', '{"a":1', '["a]', '{"a":1}x', '{a:1}', '{"a":01}', '[1 2]', '{"a":"\n"}', '\ufeff{"a":1}', '{"a":-}', '{"a":tru}', '']) {
    t.notOk(split(bad, 1).ok, `refused: ${show(bad)}`)
  }
})

t.test('an agent-sized body: no piece above the limit, the same value', async t => {
  const messages = []
  for (let i = 0; i < 60; i++) messages.push({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} — “${'x'.repeat(3000)}” 编码` })
  const text = JSON.stringify({ model: 'm', messages, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }], max_tokens: 10 })
  t.ok(text.length > 150_000)
  t.ok(agree(text, 60_000))
  t.ok(agree(text, 2_000))
})

t.test('a body of tiny containers: no more than one span per 8 bytes is noted, and it is parsed whole', async t => {
  const text = '[' + Array.from({ length: 20_000 }, () => '[]').join(',') + ']'
  const b = Buffer.from(text)
  const spans: number[] = []
  scanBody(b, 64, spans)
  t.same(spans, [-1], 'given up: the containers are denser than one per 16 bytes')
  t.throws(() => parseSplit(b, spans, 1000), SyntaxError, 'the walk refuses, so the body parser falls back to JSON.parse of the whole text')
  const roomy: number[] = []
  scanBody(b, 64, roomy, Infinity)
  t.equal(roomy.length, 2 * 20_001)
  t.ok(sameShape(parseSplit(b, roomy, 1000), JSON.parse(text)))
})
