/** @module i18n – error text catalogue; locale from X-Locale > Accept-Language > en. */
import { ERRORS, formatTemplate, type ErrorCode, type GatewayError } from './errors.ts'

export type Locale = 'en' | 'zh-CN'

/** Simplified Chinese texts; a code missing here falls back to English. Codes and types never change. */
const ZH_CN: Partial<Record<ErrorCode, string>> = {
  GW_ERR_BAD_REQUEST: '请求无效：%s',
  GW_ERR_INVALID_JSON: '请求体不是有效的 JSON。',
  GW_ERR_CONTENT_TYPE: 'Content-Type 必须是 application/json。',
  GW_ERR_JSON_TOO_DEEP: '请求体的嵌套层级超过 %s 层。',
  GW_ERR_BAD_URL: '请求 URL 格式错误。',
  GW_ERR_BAD_HTTP: '请求不是有效的 HTTP 请求。',
  GW_ERR_HEADERS_TOO_LARGE: '请求头过大。',
  GW_ERR_MODEL_MISSING: '请求体必须包含 "model"。',
  GW_ERR_MODEL_ID_MISSING: '缺少模型 ID。',
  GW_ERR_LIMIT_INVALID: '查询参数 "limit" 必须是 1 到 1000 之间的整数。',
  GW_ERR_MEDIA_INVALID: '%s 中的媒体无效：%s',
  GW_ERR_UPSTREAM_BAD_REQUEST: '模型拒绝了该请求：%s',
  GW_ERR_AUTH_MISSING_KEY: '缺少 API 密钥。请发送 "Authorization: Bearer <API_KEY>"。',
  GW_ERR_AUTH_INVALID_KEY: 'API 密钥无效。',
  GW_ERR_BALANCE_INSUFFICIENT: '余额不足，无法处理此请求。',
  GW_ERR_KEY_BUDGET_EXHAUSTED: '此 API 密钥的总预算不足以处理此请求。',
  GW_ERR_BALANCE_NO_ORGANIZATION: '此 API 密钥缺少组织信息，余额检查需要组织。',
  GW_ERR_MODEL_UNKNOWN: '模型 "%s" 不存在或此密钥无权使用。',
  GW_ERR_MODEL_NOT_FOUND: '模型 "%s" 不存在或此密钥无权使用。',
  GW_ERR_ROUTE_NOT_FOUND: '没有 %s %s 的路由。',
  GW_ERR_RESPONSE_NOT_STORED: '未找到响应 "%s"：此网关是无状态的，不存储任何响应。',
  GW_ERR_TIMEOUT: '请求超时。',
  GW_ERR_IDEMPOTENCY_DUPLICATE: '使用此 Idempotency-Key 的请求已处理或正在处理中。',
  GW_ERR_IDEMPOTENCY_KEY_LIMIT: '此 API 密钥的 Idempotency-Key 声明过多：最多 %s 个，每 %s 秒。',
  GW_ERR_BODY_TOO_LARGE: '请求体超过 %s 字节的限制。',
  GW_ERR_RATE_LIMITED: '请求过于频繁，您已被限流。',
  GW_ERR_QUOTA_EXCEEDED: '已超出使用配额：%s。',
  GW_ERR_KEY_BUDGET_WINDOW: '此 API 密钥在当前%s的预算不足以处理此请求；%s 秒后恢复。',
  GW_ERR_ADMIN_KEY_MISSING: '缺少管理密钥。请发送 "Authorization: Bearer <ADMIN_KEY>"。',
  GW_ERR_ADMIN_KEY_INVALID: '管理密钥无效。',
  GW_ERR_ADMIN_KEY_REVOKED: '此管理密钥已被吊销。',
  GW_ERR_ADMIN_AUTH_THROTTLED: '此地址的管理登录失败次数过多，请在 %s 秒后重试。',
  GW_ERR_ORGANIZATION_UNKNOWN: '未知组织 "%s"。',
  GW_ERR_ORGANIZATION_EXISTS: '组织 "%s" 已存在。',
  GW_ERR_PROJECT_UNKNOWN: '未知项目 "%s"（组织 "%s"）。',
  GW_ERR_PROJECT_EXISTS: '项目 "%s" 已存在。',
  GW_ERR_KEY_UNKNOWN: '未知密钥 "%s"。',
  GW_ERR_KEY_EXISTS: '密钥 "%s" 已存在。',
  GW_ERR_KEY_ALREADY_REVOKED: '密钥 "%s" 已被吊销。',
  GW_ERR_PRICE_UNKNOWN: '账本中没有 "%s" 的价格（如配置中有价格，则使用配置的价格）。',
  GW_ERR_HOLD_UNKNOWN: '没有预留 "%s"（已释放、已扣费或已被清理）。',
  GW_ERR_USAGE_UNKNOWN: '没有追踪 ID 为 "%s" 的用量记录（组织 "%s"）。',
  GW_ERR_REFUND_EXCEEDS_CHARGE: '调用 "%s" 的退款总额将超过其扣费（%s；此前已退 %s）。',
  GW_ERR_LEDGER_UNBALANCED: '%s 个组织的余额不等于流水合计减扣费合计。',
  GW_ERR_HOLDS_NOT_STORED: '只有 PostgreSQL 账本逐条存储预留；SQLite 网关将预留保存在进程内（reservations: memory，随进程消失）或按组织计数（reservations: file）。',
  GW_ERR_DEPLOYMENT_UNKNOWN: '没有部署 "%s"（provider/upstreamModel）。',
  GW_ERR_CALLS_NOT_COUNTED: '此管理 API 不统计调用（构建时没有可观察的网关应用）。',
  GW_ERR_RECORD_EXISTS: '已存在',
  GW_ERR_RECORD_REFERENCE: '引用了不存在的记录',
  GW_ERR_SPOOL_OWNED: '扣费暂存文件 %s 属于正在运行的网关进程 %s，由该进程自行重放。',
  GW_ERR_SPOOL_LEFT: '%s 笔扣费未能写入，仍保留在暂存文件中。',
  GW_ERR_ADMIN_UNREACHABLE: '无法连接管理 API %s：%s',
  GW_ERR_ADMIN_ANSWER: '%s：%s',
  GW_ERR_CLI_USAGE: '%s',
  GW_ERR_INTERNAL: '内部错误。联系支持时请提供追踪 ID %s。',
  GW_ERR_NOT_IMPLEMENTED: '此接口暂未开放。',
  GW_ERR_UPSTREAM_FAILED: '模型服务未能应答。',
  GW_ERR_MODEL_LIST_UNAVAILABLE: '模型列表暂时不可用。',
  GW_ERR_UPSTREAM_UNAVAILABLE: '此模型当前没有可用的服务提供方。',
  GW_ERR_NOT_READY: '服务暂时不可用。',
  GW_ERR_STORE_FULL: '服务暂时不可用。',
}

export const CATALOGUES: Readonly<Record<Locale, Partial<Record<ErrorCode, string>>>> = {
  en: Object.fromEntries(Object.entries(ERRORS).map(([k, v]) => [k, v.message])),
  'zh-CN': ZH_CN,
}

function fromTag (tag: string): Locale | undefined {
  const t = tag.trim().toLowerCase()
  if (t === 'zh' || t.startsWith('zh-') || t.startsWith('zh_')) return 'zh-CN'
  if (t === 'en' || t.startsWith('en-') || t.startsWith('en_')) return 'en'
  return undefined
}

/** X-Locale wins; then Accept-Language by q-value (q=0 excluded); anything else → en. */
export function pickLocale (xLocale: string | undefined, acceptLanguage: string | undefined): Locale {
  if (xLocale) return fromTag(xLocale) ?? 'en'
  if (!acceptLanguage) return 'en'
  let best: Locale | undefined
  let bestQ = -1
  for (const part of acceptLanguage.split(',')) {
    const [tag, ...params] = part.split(';')
    let q = 1
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p)
      if (m) q = Number(m[1])
    }
    if (!(q > 0)) continue
    const loc = tag === undefined ? undefined : fromTag(tag)
    if (loc && q > bestQ) { best = loc; bestQ = q }
  }
  return best ?? 'en'
}

/** The error's text in a locale, with the error's own arguments. */
export function localize (code: ErrorCode, args: readonly unknown[], locale: Locale): string {
  const template = CATALOGUES[locale][code] ?? ERRORS[code].message
  return formatTemplate(template, args)
}

/** An error's text in a locale: core's catalogue, or the texts a plugin declared with its code. */
export function localizeError (err: GatewayError, locale: Locale): string {
  const texts = err.spec.texts
  if (!texts) return localize(err.code as ErrorCode, err.args, locale)
  return formatTemplate(texts[locale] ?? texts.en, err.args)
}
