/**
 * @module test/core/public-api – the public entry (index.ts) gives a protocol translator everything
 * the built-in ones need: the adapters and translators under providers/ import nothing from core/,
 * only the public entry, as an outside author would. A translator written only against
 * `model-gateway` (below) runs.
 */
import t from 'tap'
import ts from 'typescript'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  SseParser, SseWriter, sseText, sseEvent, SSE_DONE, estimateUsage, sanitizeUpstreamMessage, modelSpanOf, spliceModel, usageFromChat, usageToChat, gwError,
  type EventSink, type StreamTranslator, type Translator, type TranslateOptions, type SseEvent, type StreamFailDetail, type Usage,
} from '../../index.ts'
import { translateFixture, emitted } from '../../testing.ts'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/** Every name index.ts exports, values and types. */
function publicNames (): Set<string> {
  const program = ts.createProgram([join(ROOT, 'index.ts')], { allowImportingTsExtensions: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022 })
  const checker = program.getTypeChecker()
  const symbol = checker.getSymbolAtLocation(program.getSourceFile(join(ROOT, 'index.ts'))!)!
  return new Set(checker.getExportsOfModule(symbol).map(s => s.getName()))
}

/** `name ← specifier` for each named import of a core module in `file`. */
function coreImports (file: string): string[] {
  const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const out: string[] = []
  for (const st of src.statements) {
    if (!ts.isImportDeclaration(st) || !ts.isStringLiteral(st.moduleSpecifier)) continue
    const spec = st.moduleSpecifier.text
    if (!spec.includes('/core/')) continue
    const named = st.importClause?.namedBindings
    if (named && ts.isNamedImports(named)) for (const el of named.elements) out.push(`${(el.propertyName ?? el.name).text} ← ${spec}`)
  }
  return out
}

t.test('the built-in adapters and translators import nothing from core/: only the public entry', async t => {
  const names = publicNames()
  t.ok(names.has('definePlugin') && names.has('Translator') && names.has('SseParser'), 'the public exports are read (values and types)')
  const files = readdirSync(join(ROOT, 'providers'), { recursive: true, encoding: 'utf8' })
    .filter(f => f.endsWith('.ts')).map(f => join(ROOT, 'providers', f))
  t.ok(files.length > 20, `${files.length} files under providers/ read`)
  const reaching: string[] = []
  for (const f of files) for (const imp of coreImports(f)) reaching.push(`${f.slice(ROOT.length + 1)}: ${imp}`)
  t.same(reaching, [], 'no import of a core/ path under providers/')
})

/**
 * A translator an outside author could write with the public entry alone: a chat client on a
 * chat upstream that upper-cases the answer, its stream included.
 */
class ShoutStream implements StreamTranslator {
  usage: Usage | undefined
  startUsage: Usage | undefined = undefined
  outputChars = 0
  finished = false
  #done = false
  push (ev: SseEvent, out: EventSink): void {
    if (this.#done) return
    if (ev.data === '[DONE]') { this.#done = true; return out.done() }
    const c = JSON.parse(ev.data) as { choices?: Array<{ delta?: { content?: string }, finish_reason?: string | null }>, usage?: unknown, error?: { message?: string } }
    if (c.error) { this.#done = true; return out.event(undefined, { error: { message: sanitizeUpstreamMessage(String(c.error.message)), type: 'server_error', code: 502 } }) }
    if (c.usage) this.usage = usageFromChat(c.usage)
    const delta = c.choices?.[0]?.delta
    if (typeof delta?.content === 'string') { this.outputChars += delta.content.length; delta.content = delta.content.toUpperCase() }
    if (c.choices?.[0]?.finish_reason) this.finished = true
    out.event(undefined, c)
  }

  end (out: EventSink): void { if (!this.#done) this.fail(out, 'The model service ended the stream early.', 502) }
  fail (out: EventSink, message: string, status = 502, detail?: StreamFailDetail): void {
    if (this.#done) return
    this.blocked(out, message, status, detail)
  }

  blocked (out: EventSink, message: string, status: number, detail?: StreamFailDetail): void {
    this.#done = true
    out.event(undefined, { error: { message, type: detail?.type ?? 'server_error', code: detail?.code ?? status } })
  }
}

const shout: Translator = {
  request (body, opts: TranslateOptions) {
    if (body.n !== undefined && body.n !== 1) throw gwError('GW_ERR_BAD_REQUEST', ['n must be 1'])
    return { ...body, model: opts.upstreamModel }
  },
  requestText (body, opts) {
    const span = modelSpanOf(body)
    return span === undefined ? undefined : spliceModel(span, opts.upstreamModel)
  },
  response (answer, opts) {
    const a = answer as { choices: Array<{ message: { content: string } }>, usage?: unknown }
    for (const c of a.choices) c.message.content = c.message.content.toUpperCase()
    const usage = a.usage === undefined ? undefined : usageFromChat(a.usage)
    return { body: { ...a, usage: usageToChat(usage ?? estimateUsage(opts.estimatedInputTokens, 5)) }, usage }
  },
  stream: () => new ShoutStream(),
}

t.test('a translator written against the public entry alone', async t => {
  const { opts } = translateFixture()
  t.same(shout.request({ model: 'm/x', messages: [] }, opts), { model: 'up-x', messages: [] })
  t.throws(() => shout.request({ n: 2 }, opts), { code: 'GW_ERR_BAD_REQUEST' })
  t.equal(shout.requestText!({ model: 'm/x' }, opts), undefined, 'a body not parsed by the gateway has no span to splice')
  const answered = shout.response({ choices: [{ message: { content: 'hi' } }] }, opts)
  t.match(answered, { body: { choices: [{ message: { content: 'HI' } }], usage: { prompt_tokens: 42, completion_tokens: 2 } }, usage: undefined })
  const st = shout.stream({}, opts)
  const p = new SseParser()
  // The gateway's one serializer writes what the translator emits.
  const w = new SseWriter()
  for (const ev of p.push('data: {"choices":[{"delta":{"content":"hey"}}]}\n\ndata: {"choices":[{"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\ndata: [DONE]\n\n')) st.push(ev, w)
  const out = w.take()
  t.match(out, /"content":"HEY"/)
  t.ok(out.endsWith(SSE_DONE))
  t.same(st.usage, { inputTokens: 3, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 1 })
  t.match(emitted(w => shout.stream({}, opts).fail(w, 'cut', 408, { type: 'timeout_error' })), /"type":"timeout_error","code":408/)
  t.equal(sseText('ping', {}), 'event: ping\ndata: {}\n\n')
  t.equal(sseEvent('ping', {}), 'event: ping\ndata: {}\n\n')
  t.equal(sanitizeUpstreamMessage('see https://internal.example/x with sk-abcdefghijk'), 'see [url] with [redacted]')
})
