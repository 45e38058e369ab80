// The admin API's validation messages in plain words: a field path and a JSON-schema rule
// ("Invalid request: /body/id must match pattern \"^[\\w.:@-]{1,128}$\"") become the field's name
// and what it accepts, in the console's language. A pattern the console does not know is said as
// "holds characters that are not allowed": a regular expression is never shown.
import { t } from './i18n.js'

/** The admin API's patterns (admin/schemas.ts) → the string saying what they accept. */
const PATTERNS = {
  '^[\\w.:@-]{1,128}$': 'ruleId',
  '^\\d{1,12}(\\.\\d{1,6})?$': 'ruleAmount',
  '^\\d{4}-\\d{2}-\\d{2}': 'ruleTime',
  '^[A-Za-z0-9_-]{1,200}$': 'ruleCursor',
  '^-?\\d{1,12}(\\.\\d{1,6})?$': 'ruleSignedAmount',
  '\\S': 'ruleReason',
  '^[0-9]{1,16}$': 'ruleCursor',
  '^(\\*|[^*\\s]+\\*?)$': 'ruleModelPattern',
  '^[\\w.:@/-]+$': 'ruleTag',
  '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})?)?$': 'ruleTime',
}

/** Rules of the schema validator: [regular expression over the message, (match) => plain words]. */
const RULES = [
  [/^must match pattern "(.*)"$/, m => t(PATTERNS[m[1]] || 'ruleBadChars')],
  [/^must NOT have fewer than (\d+) characters?$/, m => m[1] === '1' ? t('ruleRequired') : t('ruleMinChars', { n: m[1] })],
  [/^must NOT have more than (\d+) characters?$/, m => t('ruleMaxChars', { n: m[1] })],
  [/^must have required property '(.*)'$/, () => t('ruleRequired')],
  [/^is not allowed$/, () => t('ruleNotAllowed')],
  [/^must be (integer|number)$/, () => t('ruleNumber')],
  [/^must be string$/, () => t('ruleText')],
  [/^must be ([<>]=?) (-?[\d.]+)$/, m => t('ruleCompare', { op: m[1], n: m[2] })],
  [/^must be equal to one of the allowed values$/, () => t('ruleOneOf')],
  [/^is after to$/, () => t('ruleAfterTo')],
  [/^is required$/, () => t('ruleRequired')],
  [/^must be positive$/, () => t('rulePositive')],
  [/^must not be 0$/, () => t('ruleNotZero')],
]

/** The field a path names, in the console's words: /body/id → Id; /querystring/from → From. */
function fieldName (path) {
  const name = path.split('/').filter(Boolean).slice(1).join('.') || path
  const known = { id: 'id', name: 'name', amount: 'amount', organization: 'organization', project: 'project', model: 'model', models: 'models', from: 'from', to: 'to', input: 'input',
    output: 'output', cachedInput: 'cachedInput', cacheWrite: 'cacheWrite', cacheWrite1h: 'cacheWrite1h',
    key: 'key', reason: 'reason', traceId: 'traceId', actor: 'actor', action: 'action', target: 'target',
    budget: 'budget', lifetimeBudget: 'lifetimeBudget', rpm: 'rpm', tpm: 'tpm', tags: 'tags', expiresAt: 'expires', window: 'budgetWindow' }
  // An item of a list is named by its list (/body/tags/0 → Tags).
  const parts = name.split('.')
  const last = /^\d+$/.test(parts[parts.length - 1]) && parts.length > 1 ? parts[parts.length - 2] : parts[parts.length - 1]
  return known[last] ? t(known[last]) : name
}

/**
 * The message of an admin API error in plain words. A validation message (a field path then a
 * rule) is rewritten; anything else is kept as the API wrote it, with any quoted regular
 * expression replaced.
 * @param {string} message
 */
export function plainMessage (message) {
  const m = /^Invalid request: (\/[\w/.-]*) (.*)$/.exec(message)
  if (m) {
    for (const [re, say] of RULES) {
      const r = re.exec(m[2])
      if (r) return `${fieldName(m[1])}: ${say(r)}`
    }
    return `${fieldName(m[1])}: ${m[2].replace(/pattern "[^"]*"/g, t('ruleBadChars'))}`
  }
  return message.replace(/must match pattern "[^"]*"/g, t('ruleBadChars'))
}
