// CPU time per call of the balance plugin's reservation estimate (core/tokens/reservation.ts)
// on request bodies of a few kinds and sizes: the byte rule alone (what it costs today), then the
// tokenizer count at several caps on the characters tokenized per call (the plugin's
// tokenizeMaxChars), on fresh text (every call different: no piece seen before) and on a body
// repeated (a conversation sent again each turn). Also js-tiktoken's own encoder on the same text,
// for comparison, and the one-off cost of loading the rank table. Single process, sequential, no
// network: it measures the function, not the gateway. Figures are medians of repeated passes on
// this machine; compare them with each other, not with another machine's.
//
// Usage: node bench/reserve-tokens.mjs [dist=dist] [--json]   (needs dist/: npm run build)
import { pathToFileURL } from 'node:url'
import { resolve } from 'node:path'

const args = process.argv.slice(2)
const asJson = args.includes('--json')
const dist = resolve(args.find(a => !a.startsWith('--')) ?? 'dist')
const load = p => import(pathToFileURL(resolve(dist, p)).href)
const { reservedInputTokens } = await load('core/tokens/estimate.js')
const { countedInputTokens, reservationInputTokens } = await load('core/tokens/reservation.js')
const { tokenCounter } = await load('core/tokens/tokenizer.js')
const { Tiktoken } = await import('js-tiktoken/lite')

const MODEL = 'claude-sonnet-4-5' // a vendor whose tokenizer is not public: reservations count with cl100k_base
const VOCAB = {
  english: 'the quick brown fox jumps over lazy dog while agent reads logs and plans its next step . , ;'.split(' '),
  code: ['const', 'let', 'return', 'await', 'function', '(req)', '{', '}', '=>', 'items.reduce((a, b) => a + b, 0)', 'if (x === 1)', 'JSON.parse(body)', '\n  ', '\n', '// note', '42', '0x1f', 'i++'],
  chinese: [...'编码代理现在是模型网关最重要的用户之一它们发送很长的提示词其中包含代码日志和说明'],
}
const SEPARATOR = { english: ' ', code: ' ', chinese: '' }

/** A deterministic generator, so that every run measures the same bodies. */
function rng (seed) { return () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648 }

/** Text of about `bytes` bytes of `kind`, words drawn at random (fresh pieces for the tokenizer). */
function text (kind, bytes, rand) {
  const vocab = VOCAB[kind]
  const parts = []
  let size = 0
  for (let i = 0; size < bytes; i++) {
    let w = vocab[Math.floor(rand() * vocab.length)]
    if (kind === 'chinese' && i % 17 === 16) w += rand() < 0.5 ? '，' : '。'
    parts.push(w)
    size += Buffer.byteLength(w) + SEPARATOR[kind].length
  }
  return parts.join(SEPARATOR[kind])
}

/** A chat body whose messages hold about `bytes` bytes of text, in messages of 1500 characters. */
function body (kind, bytes, rand) {
  const t = text(kind, bytes, rand)
  const messages = [{ role: 'system', content: 'You are a coding agent.' }]
  for (let i = 0; i < t.length; i += 1500) messages.push({ role: i % 3000 === 0 ? 'user' : 'assistant', content: t.slice(i, i + 1500) })
  return JSON.stringify({ model: 'vendor/m', max_tokens: 1024, messages })
}

function median (xs) { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] }

/** CPU µs per call of `fn(body)` over `bodies` (each parsed first, as the gateway has it), median of 5 passes. */
async function time (fn, bodies) {
  const parsed = bodies.map(b => [JSON.parse(b), Buffer.byteLength(b)])
  for (const [b, bytes] of parsed) await fn(b, bytes) // warm-up pass, not timed
  const runs = []
  for (let r = 0; r < 5; r++) {
    const t0 = process.cpuUsage()
    for (const [b, bytes] of parsed) await fn(b, bytes)
    const d = process.cpuUsage(t0)
    runs.push((d.user + d.system) / parsed.length)
  }
  return median(runs)
}

const t0 = performance.now()
await tokenCounter('cl100k_base')
const loadMs = performance.now() - t0
const { default: ranks } = await import('js-tiktoken/ranks/cl100k_base')
const tiktoken = new Tiktoken(ranks)
await countedInputTokens({ messages: [] }, MODEL, 1) // the counter loaded before timing

const CAPS = [4096, 8192, 16384, Infinity]
const rows = []
for (const kind of Object.keys(VOCAB)) {
  for (const size of [1024, 64 * 1024]) {
    const n = size <= 1024 ? 300 : 6
    // fresh: every call a different text (no piece seen before); repeated: the same body every call.
    const fresh = Array.from({ length: n }, (_, i) => body(kind, size, rng(i + 1)))
    const repeated = Array.from({ length: n }, () => fresh[0])
    const first = JSON.parse(fresh[0])
    const bytes = Buffer.byteLength(fresh[0])
    const row = { kind, bytes, floorTokens: reservedInputTokens(first, bytes, 1e9), countedTokens: await countedInputTokens(first, MODEL, Infinity) }
    row.floorUs = await time((b, k) => reservedInputTokens(b, k, 1e9), fresh)
    for (const cap of CAPS) {
      row[`fresh${cap}Us`] = await time((b, k) => reservationInputTokens(b, k, 1e9, MODEL, cap), fresh)
      row[`reserved${cap}`] = await reservationInputTokens(first, bytes, 1e9, MODEL, cap)
    }
    row.repeated8192Us = await time((b, k) => reservationInputTokens(b, k, 1e9, MODEL, 8192), repeated)
    row.jsTiktokenUs = await time(b => { for (const m of b.messages) tiktoken.encode(m.content) }, fresh.slice(0, Math.max(2, Math.floor(n / 10))))
    rows.push(row)
  }
}

if (asJson) {
  console.log(JSON.stringify({ loadMs, rows }))
} else {
  const us = v => (v < 10 ? v.toFixed(1) : v.toFixed(0)).padStart(8)
  console.log(`cl100k_base rank table loaded in ${loadMs.toFixed(0)} ms (once per process). CPU µs per call; "fresh": a different text every call, "repeated": the same body every call.`)
  console.log('kind       bytes  floor tok counted tok  reserved@8K |  floor   cap 4K   cap 8K  cap 16K   no cap | repeated@8K | js-tiktoken (all)')
  for (const r of rows) {
    console.log(`${r.kind.padEnd(8)} ${String(r.bytes).padStart(7)} ${String(r.floorTokens).padStart(10)} ${String(r.countedTokens).padStart(11)} ${String(r.reserved8192).padStart(12)} |${us(r.floorUs)} ${us(r.fresh4096Us)} ${us(r.fresh8192Us)} ${us(r.fresh16384Us)} ${us(r.freshInfinityUs)} | ${us(r.repeated8192Us)}    | ${us(r.jsTiktokenUs)}`)
  }
}
