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
    callsNote: 'Requests, tokens and spend: billed usage records of every replica (the ledger). Error rate: calls that failed (5xx, or a stream cut by its upstream) among the calls ' +
      'this replica ended since {since}; refused: answered 4xx (key, balance, limits, bad requests).',
    perModel: 'Per model', perOrganization: 'Per organization', model: 'Model', organization: 'Organization',
    other: 'other', none: '(none)', loading: 'Loading…',
    id: 'Id', name: 'Name', balance: 'Balance', reserved: 'Reserved', available: 'Available', created: 'Created',
    createOrganization: 'Create organization', create: 'Create', topUp: 'Top up', amount: 'Amount',
    confirmTopUp: 'Add {amount} to organization {org}?', confirm: 'Confirm', cancel: 'Cancel',
    projects: 'Projects', createProject: 'Create project', project: 'Project',
    createKey: 'Create key', filterByOrganization: 'Filter by organization', all: 'All', prefix: 'Prefix',
    models: 'Models', allowedModels: 'Allowed models (none checked: every model)', status: 'Status', active: 'active', revoked: 'revoked', revoke: 'Revoke',
    confirmRevoke: 'Revoke key {id}? Calls with it are refused.',
    secretOnce: 'The key\'s secret, shown this once only:', copy: 'Copy', copied: 'Copied', copyFailed: 'Copy failed: select the text and copy it', dismiss: 'Done',
    source: 'Source', input: 'Input / 1M', cachedInput: 'Cached input / 1M', output: 'Output / 1M', edit: 'Edit',
    setPrice: 'Set a price', save: 'Save', optional: 'optional',
    confirmPrice: 'Set the price of {model} to input {input}, cached input {cached}, output {output} per million tokens? It overrides the config\'s price on every replica within 30 s.',
    from: 'From', to: 'To', key: 'Key', apply: 'Apply', next: 'Next page', previous: 'Previous page', first: 'First page', page: 'Page {n}', downloadCsv: 'Download CSV',
    time: 'Time', cost: 'Cost', trace: 'Trace id', noRows: 'Nothing here.',
    adapter: 'Adapter', protocol: 'Protocol', baseUrl: 'Base URL', deployments: 'Deployments',
    state: 'Circuit', failures: 'Failures', openedAt: 'Opened at', reset: 'Reset',
    version: 'Version', node: 'Node', error: 'Error', actions: 'Actions', done: 'Done.',
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
    perModel: '按模型', perOrganization: '按组织', model: '模型', organization: '组织',
    other: '其他', none: '（无）', loading: '加载中…',
    id: 'ID', name: '名称', balance: '余额', reserved: '预留', available: '可用', created: '创建时间',
    createOrganization: '创建组织', create: '创建', topUp: '充值', amount: '金额',
    confirmTopUp: '向组织 {org} 充值 {amount}？', confirm: '确认', cancel: '取消',
    projects: '项目', createProject: '创建项目', project: '项目',
    createKey: '创建密钥', filterByOrganization: '按组织筛选', all: '全部', prefix: '前缀',
    models: '模型', allowedModels: '允许的模型（不勾选：所有模型）', status: '状态', active: '有效', revoked: '已吊销', revoke: '吊销', confirmRevoke: '吊销密钥 {id}？使用它的调用将被拒绝。',
    secretOnce: '密钥内容仅显示这一次：', copy: '复制', copied: '已复制', copyFailed: '复制失败：请选中文本手动复制', dismiss: '完成',
    source: '来源', input: '输入 / 百万', cachedInput: '缓存输入 / 百万', output: '输出 / 百万', edit: '编辑',
    setPrice: '设置价格', save: '保存', optional: '可选',
    confirmPrice: '将 {model} 的价格设为每百万令牌：输入 {input}，缓存输入 {cached}，输出 {output}？它将在 30 秒内在所有副本上覆盖配置中的价格。',
    from: '开始', to: '结束', key: '密钥', apply: '应用', next: '下一页', previous: '上一页', first: '第一页', page: '第 {n} 页', downloadCsv: '下载 CSV',
    time: '时间', cost: '费用', trace: '追踪 ID', noRows: '暂无数据。',
    adapter: '适配器', protocol: '协议', baseUrl: '基础 URL', deployments: '部署',
    state: '熔断器', failures: '失败次数', openedAt: '打开时间', reset: '重置',
    version: '版本', node: 'Node', error: '错误', actions: '操作', done: '完成。',
  },
}

let lang = 'en'
/** @param {'en' | 'zh-CN' | 'zh'} l `zh`, the older name of `zh-CN`, is still accepted. */
export function setLang (l) { lang = l === 'zh' ? 'zh-CN' : l }
export const getLang = () => lang

/** @param {string} key @param {Record<string, string>} [vars] */
export function t (key, vars) {
  /** @type {Record<string, Record<string, string>>} */
  const all = STRINGS
  let s = (all[lang]?.[key]) || all.en[key] || key
  if (vars) for (const [k, v] of Object.entries(vars)) s = s.replace(`{${k}}`, v)
  return s
}
