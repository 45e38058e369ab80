/**
 * @module test/docs/config-reference – docs/config-reference.md is the config schemas, written out:
 * every key of the config file, of each built-in plugin's `config` and of each built-in adapter's
 * `config`, with its type, default and description. This test renders the schemas and fails when the
 * file differs (a key added, renamed or re-described without the reference following) or when a key
 * has no description. `UPDATE_DOCS=1` rewrites the file instead:
 *   UPDATE_DOCS=1 npx tap test/docs/config-reference.test.ts --disable-coverage
 */
import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { GatewayConfigSchema } from '../../core/config/config-schema.ts'
import { builtinPlugins } from '../../plugins/index.ts'
import { builtinProviders } from '../../providers/index.ts'

const FILE = new URL('../../docs/config-reference.md', import.meta.url)

interface Schema {
  type?: string
  description?: string
  default?: unknown
  const?: unknown
  enum?: unknown[]
  anyOf?: Schema[]
  items?: Schema
  properties?: Record<string, Schema>
  patternProperties?: Record<string, Schema>
  required?: string[]
  minimum?: number
  maximum?: number
  minLength?: number
  pattern?: string
}

interface Row { key: string, type: string, def: string, description: string }

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ')

/** A short type: `integer ≥ 1`, `"exact" \| "lease"`, `string[]`, `object`, `map of number`. */
function typeOf (s: Schema): string {
  if (s.const !== undefined) return JSON.stringify(s.const)
  if (s.enum) return s.enum.map(v => JSON.stringify(v)).join(' | ')
  if (s.anyOf) return [...new Set(s.anyOf.map(typeOf))].join(' | ')
  if (s.type === 'array') return `${s.items ? typeOf(s.items) : 'any'}[]`
  if (s.patternProperties) return `map of ${[...new Set(Object.values(s.patternProperties).map(typeOf))].join(' | ')}`
  let out = s.type ?? 'any'
  if (s.minimum !== undefined && s.maximum !== undefined) out += ` ${s.minimum}–${s.maximum}`
  else if (s.minimum !== undefined) out += ` ≥ ${s.minimum}`
  else if (s.maximum !== undefined) out += ` ≤ ${s.maximum}`
  return out
}

const isObject = (s: Schema): boolean => s.properties !== undefined || (s.anyOf?.some(isObject) ?? false)

/** The description of `s`, or of the first alternative that has one (an optional union). */
const describe = (s: Schema): string | undefined => s.description ?? s.anyOf?.find(x => x.description)?.description

function rows (s: Schema, prefix: string, out: Row[], undocumented: string[]): Row[] {
  if (s.anyOf) {
    for (const alt of s.anyOf) if (isObject(alt) || alt.type === 'array') rows(alt, prefix, out, undocumented)
    return out
  }
  if (s.type === 'array' && s.items) return rows(s.items, `${prefix}[]`, out, undocumented)
  for (const [name, child] of Object.entries(s.properties ?? {})) {
    const key = prefix ? `${prefix}.${name}` : name
    const description = describe(child)
    if (description === undefined && !isObject(child)) undocumented.push(key)
    const required = s.required?.includes(name) && child.default === undefined
    out.push({
      key,
      type: isObject(child) ? 'object' : typeOf(child),
      def: child.default !== undefined ? `\`${JSON.stringify(child.default)}\`` : required ? 'required' : '',
      description: description ?? '',
    })
    rows(child, key, out, undocumented)
  }
  for (const child of Object.values(s.patternProperties ?? {})) if (isObject(child)) rows(child, `${prefix}.<name>`, out, undocumented)
  return out
}

function table (list: Row[], head: string): string {
  return [`| ${head} | type | default | description |`, '|---|---|---|---|',
    ...list.map(r => `| \`${r.key}\` | ${cell(r.type)} | ${cell(r.def)} | ${cell(r.description)} |`)].join('\n')
}

function render (): { text: string, undocumented: string[] } {
  const undocumented: string[] = []
  const parts = [
    '# Configuration reference',
    '',
    'Generated from the config schemas by test/docs/config-reference.test.ts (which fails when this file',
    'and the schemas differ; `UPDATE_DOCS=1` rewrites it). How the pieces fit together, with examples, is',
    'in [configuration.md](configuration.md); `gateway.example.yaml` is a complete, annotated file.',
    '`a[].b` is key `b` of every item of the list `a`; `<name>` stands for a key of your choosing.',
    '',
    '## The config file',
    '',
    table(rows(GatewayConfigSchema as Schema, '', [], undocumented), 'key'),
    '',
    '## Plugins (`pipeline[].config`)',
  ]
  for (const p of builtinPlugins) {
    const list = p.configSchema ? rows(p.configSchema as Schema, '', [], undocumented) : []
    parts.push('', `### \`${p.name}\``, '', list.length ? table(list, 'key') : 'No configuration.')
  }
  parts.push('', '## Provider adapters (`providers[].config`)')
  for (const a of builtinProviders) {
    const list = rows(a.configSchema as Schema, '', [], undocumented)
    parts.push('', `### \`${a.name}\``, '', list.length ? table(list, 'key') : 'No configuration.')
  }
  return { text: parts.join('\n') + '\n', undocumented }
}

t.test('docs/config-reference.md is the config schemas written out', async t => {
  const { text, undocumented } = render()
  t.same(undocumented, [], 'every config key has a description in its schema')
  if (process.env.UPDATE_DOCS === '1') {
    writeFileSync(FILE, text)
    t.pass('docs/config-reference.md rewritten')
    return
  }
  let current = ''
  try { current = readFileSync(FILE, 'utf8') } catch {}
  t.equal(current, text, 'docs/config-reference.md matches the schemas (UPDATE_DOCS=1 rewrites it)')
})
