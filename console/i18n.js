// Every string of the console, one table per language (English, Simplified Chinese).
export const STRINGS = {
  en: {
    title: 'Gateway console', signIn: 'Sign in', signOut: 'Sign out', adminKey: 'Admin key',
    signInHelp: 'The key stays in this page\'s memory only: reloading the page signs you out.',
    overview: 'Overview', organizations: 'Organizations', keys: 'Keys', prices: 'Prices', usage: 'Usage',
    providers: 'Providers', config: 'Config', language: 'Language', range: 'Time range', groupBy: 'Charts',
    lastHour: 'Last hour', lastDay: 'Last day', last30: 'Last 30 days',
    requests: 'Requests', tokens: 'Tokens', inputTokens: 'Input tokens', outputTokens: 'Output tokens', spend: 'Spend',
    errorRate: 'Error rate', refusedRate: 'Refused', calls: 'Calls', errors: 'Errors', refused: 'Refused',
    perMinute: 'per minute', perHour: 'per hour', perDay: 'per day',
    callsNote: 'Requests, tokens and spend: billed usage records of every replica (the ledger). Error rate: calls that failed (5xx, or a stream cut by its upstream) among the calls this replica ' +
      'ended since {since}; refused: answered 4xx (key, balance, limits, bad requests).',
    perModel: 'Per model', perOrganization: 'Per organization', perKey: 'Spend per key', perProject: 'Spend per project', model: 'Model', organization: 'Organization',
    other: 'other', none: '(none)', loading: 'Loading…',
    id: 'Id', name: 'Name', balance: 'Balance', reserved: 'Reserved', available: 'Available', created: 'Created',
    createOrganization: 'Create organization', create: 'Create', topUp: 'Top up', amount: 'Amount',
    confirmTopUp: 'Add {amount} to organization {org}?', confirm: 'Confirm', cancel: 'Cancel',
    projects: 'Projects', createProject: 'Create project', project: 'Project',
    createKey: 'Create key', filterByOrganization: 'Filter by organization', all: 'All', prefix: 'Prefix',
    models: 'Models', allowedModels: 'Allowed models (none checked: every model)', status: 'Status', active: 'active', revoked: 'revoked', revoke: 'Revoke',
    confirmRevoke: 'Revoke key {id}? Calls with it are refused.',
    rotate: 'Rotate', confirmRotate: 'Give key {id} a new secret? The current one keeps working for an hour.',
    budget: 'Budget', spent: 'Spent', limits: 'Rate limits', expires: 'Expires', tags: 'Tags', tag: 'Tag', lastUsed: 'Last used', lifetime: 'lifetime',
    perDayBudget: 'per day', perMonthBudget: 'per month', perSeconds: 'per {n} s', rpm: 'requests/min', tpm: 'tokens/min',
    budgetAmount: 'Budget', budgetWindow: 'Budget window', lifetimeBudget: 'Lifetime budget', tagsComma: 'Tags (comma-separated)', spendPerTag: 'Spend per tag (lifetime)',
    secretOnce: 'The key\'s secret, shown this once only:', copy: 'Copy', copied: 'Copied', copyFailed: 'Copy failed: select the text and copy it', dismiss: 'Done',
    source: 'Source', input: 'Input / 1M', cachedInput: 'Cached input / 1M', cacheWrite: 'Cache write / 1M', cacheWrite1h: '1 h cache write / 1M', output: 'Output / 1M', edit: 'Edit',
    setPrice: 'Set a price', save: 'Save', optional: 'optional',
    confirmPrice: 'Set the price of {model} to input {input}, cached input {cached}, cache write {write}, one-hour cache write {write1h}, output {output} per million tokens? ' +
      'It overrides the config\'s price on every replica within 30 s.',
    from: 'From', to: 'To', key: 'Key', apply: 'Apply', next: 'Next page', previous: 'Previous page', first: 'First page', page: 'Page {n}', downloadCsv: 'Download CSV',
    time: 'Time', cost: 'Cost', trace: 'Trace id', noRows: 'Nothing here.',
    adapter: 'Adapter', protocol: 'Protocol', baseUrl: 'Base URL', deployments: 'Deployments',
    state: 'Circuit', failures: 'Failures', openedAt: 'Opened at', reset: 'Reset',
    version: 'Version', node: 'Node', error: 'Error', actions: 'Actions', done: 'Done.',
    configVersion: 'Config version', loadedAt: 'Loaded at', packageVersion: 'Package version',
    latency: 'Latency', latencyNote: 'This replica\'s latest served calls per model (at most 1000 each) since {since}: duration from request to the response\'s end, time to first byte (TTFB) from ' +
      'request to the status line.',
    p50: 'p50', p95: 'p95', ttfbP50: 'TTFB p50', ttfbP95: 'TTFB p95', ms: '{n} ms',
    failedCalls: 'Recent failed calls', failedNote: 'The latest failed calls of this replica: server errors (5xx, streams cut) and refusals (4xx), 100 of each kept.',
    serverErrors: 'Server errors', clientErrors: 'Refusals', code: 'Code', message: 'Message', duration: 'Duration', route: 'Route',
    total: 'Total', totalsNote: 'Totals of every record the filter matches (all pages).', requestsN: '{n} requests',
    ruleModelPattern: 'a model id, or a pattern ending in * (openai/*, or * alone)', ruleTag: 'letters, digits and _ . : @ / - only, at most 64 characters',
    ruleId: 'letters, digits and _ . : @ - only, at most 128 characters', ruleAmount: 'an amount such as 12.50, at most 6 decimals',
    ruleTime: 'a date such as 2025-01-31 or 2025-01-31T12:00:00Z', ruleCursor: 'not a page this console was given: go back to the first page',
    ruleBadChars: 'holds characters that are not allowed', ruleRequired: 'is required', ruleMinChars: 'at least {n} characters',
    ruleMaxChars: 'at most {n} characters', ruleNotAllowed: 'is not accepted here', ruleNumber: 'must be a number', ruleText: 'must be text',
    ruleCompare: 'must be {op} {n}', ruleOneOf: 'is not one of the accepted values', ruleAfterTo: 'is after the end (To)',
    audit: 'Audit log', organizationTitle: 'Organization {id}', allOrganizations: '← All organizations', history: 'Balance history',
    historyNote: 'Every change of this balance, newest first, with who made it: top-ups, adjustments, refunds, the opening balance. Calls\' charges are in Usage.',
    adjust: 'Adjust', refund: 'Refund', reason: 'Reason', kind: 'Kind', balanceAfter: 'Balance after', actor: 'Actor', action: 'Action', target: 'Target', result: 'Result',
    changes: 'Before and after', show: 'Show', before: 'Before', after: 'After', ok: 'ok',
    adjustHelp: 'A correction, with its reason: a negative amount (such as -2.50) takes money off.',
    refundHelp: 'Money given back, with its reason; with a call\'s trace id, at most what that call was charged.',
    confirmAdjust: 'Change the balance of {org} by {amount}? Reason: {reason}', confirmRefund: 'Refund {amount} to {org}? Reason: {reason}',
    kind_topup: 'Top-up', kind_adjustment: 'Adjustment', kind_refund: 'Refund', kind_opening: 'Opening balance', kind_migration: 'Journal opened', kind_carry: 'Earlier charges carried',
    auditNote: 'Every admin write, through the admin API or the admin CLI: who (admin:<admin key> or cli:<user>), what, on which record, the result, ' +
      'and the record before and after (money in micro-units).',
    ruleSignedAmount: 'an amount such as -2.50 or 12.50, at most 6 decimals', ruleReason: 'say why, in a few words', rulePositive: 'must be more than 0', ruleNotZero: 'must not be 0',
    traceId: 'Trace id',
  },
  'zh-CN': {
    title: '网关控制台', signIn: '登录', signOut: '退出', adminKey: '管理密钥',
    signInHelp: '密钥只保存在本页面内存中：刷新页面即退出登录。',
    overview: '概览', organizations: '组织', keys: '密钥', prices: '价格', usage: '用量',
    providers: '提供方', config: '配置', language: '语言', range: '时间范围', groupBy: '图表',
    lastHour: '最近一小时', lastDay: '最近一天', last30: '最近 30 天',
    requests: '请求数', tokens: '令牌数', inputTokens: '输入令牌', outputTokens: '输出令牌', spend: '花费',
    errorRate: '错误率', refusedRate: '拒绝', calls: '调用', errors: '错误', refused: '拒绝',
    perMinute: '每分钟', perHour: '每小时', perDay: '每天',
    callsNote: '请求数、令牌数和花费：所有副本已计费的用量记录（账本）。错误率：本副本自 {since} 起结束的调用中失败（5xx，或上游中断的流）的比例；拒绝：返回 4xx（密钥、余额、限流、错误请求）。',
    perModel: '按模型', perOrganization: '按组织', perKey: '按密钥的花费', perProject: '按项目的花费', model: '模型', organization: '组织',
    other: '其他', none: '（无）', loading: '加载中…',
    id: 'ID', name: '名称', balance: '余额', reserved: '预留', available: '可用', created: '创建时间',
    createOrganization: '创建组织', create: '创建', topUp: '充值', amount: '金额',
    confirmTopUp: '向组织 {org} 充值 {amount}？', confirm: '确认', cancel: '取消',
    projects: '项目', createProject: '创建项目', project: '项目',
    createKey: '创建密钥', filterByOrganization: '按组织筛选', all: '全部', prefix: '前缀',
    models: '模型', allowedModels: '允许的模型（不勾选：所有模型）', status: '状态', active: '有效', revoked: '已吊销', revoke: '吊销', confirmRevoke: '吊销密钥 {id}？使用它的调用将被拒绝。',
    rotate: '轮换', confirmRotate: '为密钥 {id} 生成新的密钥串？当前密钥串在一小时内仍然有效。',
    budget: '预算', spent: '已花费', limits: '速率限制', expires: '到期', tags: '标签', tag: '标签', lastUsed: '最后使用', lifetime: '总计',
    perDayBudget: '每天', perMonthBudget: '每月', perSeconds: '每 {n} 秒', rpm: '请求/分钟', tpm: '令牌/分钟',
    budgetAmount: '预算', budgetWindow: '预算周期', lifetimeBudget: '总预算', tagsComma: '标签（逗号分隔）', spendPerTag: '各标签花费（总计）',
    secretOnce: '密钥内容仅显示这一次：', copy: '复制', copied: '已复制', copyFailed: '复制失败：请选中文本手动复制', dismiss: '完成',
    source: '来源', input: '输入 / 百万', cachedInput: '缓存输入 / 百万', cacheWrite: '缓存写入 / 百万', cacheWrite1h: '1 小时缓存写入 / 百万', output: '输出 / 百万', edit: '编辑',
    setPrice: '设置价格', save: '保存', optional: '可选',
    confirmPrice: '将 {model} 的价格设为每百万令牌：输入 {input}，缓存输入 {cached}，缓存写入 {write}，1 小时缓存写入 {write1h}，输出 {output}？它将在 30 秒内在所有副本上覆盖配置中的价格。',
    from: '开始', to: '结束', key: '密钥', apply: '应用', next: '下一页', previous: '上一页', first: '第一页', page: '第 {n} 页', downloadCsv: '下载 CSV',
    time: '时间', cost: '费用', trace: '追踪 ID', noRows: '暂无数据。',
    adapter: '适配器', protocol: '协议', baseUrl: '基础 URL', deployments: '部署',
    state: '熔断器', failures: '失败次数', openedAt: '打开时间', reset: '重置',
    version: '版本', node: 'Node', error: '错误', actions: '操作', done: '完成。',
    configVersion: '配置版本', loadedAt: '加载时间', packageVersion: '软件包版本',
    latency: '延迟', latencyNote: '本副本自 {since} 起每个模型最近服务成功的调用（每个模型最多 1000 次）：耗时为从请求到响应结束，首字节时间（TTFB）为从请求到状态行发出。',
    p50: 'p50', p95: 'p95', ttfbP50: 'TTFB p50', ttfbP95: 'TTFB p95', ms: '{n} 毫秒',
    failedCalls: '最近失败的调用', failedNote: '本副本最近失败的调用：服务器错误（5xx、被中断的流）和拒绝（4xx），各保留 100 条。',
    serverErrors: '服务器错误', clientErrors: '拒绝', code: '代码', message: '消息', duration: '耗时', route: '路由',
    total: '合计', totalsNote: '筛选条件匹配的全部记录（所有页）的合计。', requestsN: '{n} 个请求',
    ruleModelPattern: '应为模型 ID，或以 * 结尾的模式（openai/*，或单独的 *）', ruleTag: '只能包含字母、数字和 _ . : @ / -，最多 64 个字符',
    ruleId: '只能包含字母、数字和 _ . : @ -，最多 128 个字符', ruleAmount: '应为金额，例如 12.50，最多 6 位小数',
    ruleTime: '应为日期，例如 2025-01-31 或 2025-01-31T12:00:00Z', ruleCursor: '不是本控制台给出的页码：请回到第一页',
    ruleBadChars: '包含不允许的字符', ruleRequired: '必填', ruleMinChars: '至少 {n} 个字符',
    ruleMaxChars: '最多 {n} 个字符', ruleNotAllowed: '此处不接受', ruleNumber: '必须是数字', ruleText: '必须是文本',
    ruleCompare: '必须 {op} {n}', ruleOneOf: '不是可接受的值之一', ruleAfterTo: '晚于结束时间',
    audit: '审计日志', organizationTitle: '组织 {id}', allOrganizations: '← 全部组织', history: '余额流水',
    historyNote: '此余额的每一次变动（最新在前）及其操作者：充值、调整、退款、期初余额。调用的扣费见“用量”。',
    adjust: '调整', refund: '退款', reason: '原因', kind: '类型', balanceAfter: '变动后余额', actor: '操作者', action: '操作', target: '对象', result: '结果',
    changes: '变更前后', show: '显示', before: '变更前', after: '变更后', ok: '成功',
    adjustHelp: '更正余额，需注明原因：负数金额（例如 -2.50）表示扣减。',
    refundHelp: '退还款项，需注明原因；填写某次调用的追踪 ID 时，退款总额不超过该调用的扣费。',
    confirmAdjust: '将组织 {org} 的余额调整 {amount}？原因：{reason}', confirmRefund: '向组织 {org} 退款 {amount}？原因：{reason}',
    kind_topup: '充值', kind_adjustment: '调整', kind_refund: '退款', kind_opening: '期初余额', kind_migration: '流水启用', kind_carry: '结转此前扣费',
    auditNote: '通过管理 API 或管理命令行进行的每一次写操作：操作者（admin:<管理密钥> 或 cli:<用户>）、操作、对象、结果，以及变更前后的记录（金额单位为百万分之一）。',
    ruleSignedAmount: '应为金额，例如 -2.50 或 12.50，最多 6 位小数', ruleReason: '请简要说明原因', rulePositive: '必须大于 0', ruleNotZero: '不能为 0',
    traceId: '追踪 ID',
  },
}

let lang = 'en'
/** @param {'en' | 'zh-CN'} l */
export function setLang (l) { lang = l }
export const getLang = () => lang

/** @param {string} key @param {Record<string, string>} [vars] */
export function t (key, vars) {
  /** @type {Record<string, Record<string, string>>} */
  const all = STRINGS
  let s = (all[lang]?.[key]) || all.en[key] || key
  if (vars) for (const [k, v] of Object.entries(vars)) s = s.replace(`{${k}}`, v)
  return s
}

// ── Dates and numbers in the console's language and the browser's time zone (the API's are UTC). ──
/** @param {Intl.DateTimeFormatOptions} o */
const dates = o => new Intl.DateTimeFormat(lang, o)
/** A time (ms or ISO string) as date and time to the second, local. */
export const fmtDateTime = v => v === null || v === undefined || v === '' ? '—' : dates({ year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit',
  hourCycle: 'h23' }).format(new Date(v))
/** A chart's time tick: hour and minute for minute and hour buckets (the date where the day changes), the date for day buckets. */
export function fmtTick (ms, bucketMs, withDate) {
  if (bucketMs >= 86_400_000) return dates({ month: 'short', day: 'numeric' }).format(new Date(ms))
  const time = dates({ hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(ms))
  return withDate ? `${dates({ month: 'short', day: 'numeric' }).format(new Date(ms))} ${time}` : time
}
/** An integer with the language's grouping. */
export const fmtInt = n => Number(n).toLocaleString(lang)
