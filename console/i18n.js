// Every string of the console, one table per language (English, Simplified Chinese).
export const STRINGS = {
  en: {
    title: 'Gateway console', signIn: 'Sign in', signOut: 'Sign out', adminKey: 'Admin key',
    signInHelp: 'The key stays in this page\'s memory only: reloading the page signs you out.',
    overview: 'Overview', organizations: 'Organizations', keys: 'Keys', prices: 'Prices', usage: 'Usage',
    circuits: 'Circuits', config: 'Config', language: 'Language',
    lastHour: 'Last hour', lastDay: 'Last day', last30: 'Last 30 days',
    requests: 'Requests', tokens: 'Tokens', inputTokens: 'Input tokens', outputTokens: 'Output tokens', spend: 'Spend',
    errorRate: 'Error rate', errorRateNote: 'Usage records are written for settled calls only: refused and failed calls are in the gateway metrics, not here.',
    perModel: 'Per model', perOrganization: 'Per organization', model: 'Model', organization: 'Organization',
    requestsPerHour: 'Requests per hour', loading: 'Loading…', truncated: 'Only the newest records were read',
    id: 'Id', name: 'Name', balance: 'Balance', reserved: 'Reserved', available: 'Available', created: 'Created',
    createOrganization: 'Create organization', create: 'Create', topUp: 'Top up', amount: 'Amount',
    confirmTopUp: 'Add {amount} to organization {org}?', confirm: 'Confirm', cancel: 'Cancel',
    projects: 'Projects', createProject: 'Create project', project: 'Project',
    createKey: 'Create key', filterByOrganization: 'Filter by organization', all: 'All', prefix: 'Prefix',
    models: 'Models', status: 'Status', active: 'active', revoked: 'revoked', revoke: 'Revoke', confirmRevoke: 'Revoke key {id}? Calls with it are refused.',
    secretOnce: 'The key\'s secret, shown this once only:', copy: 'Copy', copied: 'Copied', dismiss: 'Done',
    source: 'Source', input: 'Input / 1M', cachedInput: 'Cached input / 1M', output: 'Output / 1M',
    from: 'From', to: 'To', key: 'Key', apply: 'Apply', next: 'Next page', first: 'First page', downloadCsv: 'Download CSV',
    time: 'Time', cost: 'Cost', trace: 'Trace id', noRows: 'Nothing here.',
    provider: 'Provider', state: 'State', failures: 'Failures', openedAt: 'Opened at', reset: 'Reset',
    version: 'Version', node: 'Node', error: 'Error', actions: 'Actions', done: 'Done.',
  },
  zh: {
    title: '网关控制台', signIn: '登录', signOut: '退出', adminKey: '管理密钥',
    signInHelp: '密钥只保存在本页面内存中：刷新页面即退出登录。',
    overview: '概览', organizations: '组织', keys: '密钥', prices: '价格', usage: '用量',
    circuits: '熔断器', config: '配置', language: '语言',
    lastHour: '最近一小时', lastDay: '最近一天', last30: '最近 30 天',
    requests: '请求数', tokens: '令牌数', inputTokens: '输入令牌', outputTokens: '输出令牌', spend: '花费',
    errorRate: '错误率', errorRateNote: '用量记录只包含已结算的调用：被拒绝和失败的调用见网关指标。',
    perModel: '按模型', perOrganization: '按组织', model: '模型', organization: '组织',
    requestsPerHour: '每小时请求数', loading: '加载中…', truncated: '只读取了最新的记录',
    id: 'ID', name: '名称', balance: '余额', reserved: '预留', available: '可用', created: '创建时间',
    createOrganization: '创建组织', create: '创建', topUp: '充值', amount: '金额',
    confirmTopUp: '向组织 {org} 充值 {amount}？', confirm: '确认', cancel: '取消',
    projects: '项目', createProject: '创建项目', project: '项目',
    createKey: '创建密钥', filterByOrganization: '按组织筛选', all: '全部', prefix: '前缀',
    models: '模型', status: '状态', active: '有效', revoked: '已吊销', revoke: '吊销', confirmRevoke: '吊销密钥 {id}？使用它的调用将被拒绝。',
    secretOnce: '密钥内容仅显示这一次：', copy: '复制', copied: '已复制', dismiss: '完成',
    source: '来源', input: '输入 / 百万', cachedInput: '缓存输入 / 百万', output: '输出 / 百万',
    from: '开始', to: '结束', key: '密钥', apply: '应用', next: '下一页', first: '第一页', downloadCsv: '下载 CSV',
    time: '时间', cost: '费用', trace: '追踪 ID', noRows: '暂无数据。',
    provider: '提供方', state: '状态', failures: '失败次数', openedAt: '打开时间', reset: '重置',
    version: '版本', node: 'Node', error: '错误', actions: '操作', done: '完成。',
  },
}
export function translate (lang, key, vars) {
  let s = (STRINGS[lang] && STRINGS[lang][key]) || STRINGS.en[key] || key
  if (vars) for (const [k, v] of Object.entries(vars)) s = s.replace(`{${k}}`, v)
  return s
}
