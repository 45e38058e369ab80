/**
 * @module ledger/migrations – versioned schema changes, one list per dialect. Append only: a
 * released migration is never edited; a change is a new version.
 */
import { openingRowsSql } from './journal.ts'

import { PG_HOLDS, PG_KEY_HOLDS, PG_KEY_LOCK, PG_LEASE, PG_ORG_LOCK } from './migrations-postgres.ts'

export interface Migration { version: number, name: string, sql: string }

const common = (money: string, big: string, real: string, autoId: string): string => `
CREATE TABLE organizations (
  id TEXT PRIMARY KEY,
  name TEXT,
  balance ${money} NOT NULL DEFAULT 0,
  reserved ${money} NOT NULL DEFAULT 0,
  created_at ${big} NOT NULL
);
CREATE TABLE projects (
  id TEXT PRIMARY KEY,
  organization TEXT NOT NULL REFERENCES organizations(id),
  name TEXT,
  created_at ${big} NOT NULL
);
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  name TEXT,
  organization TEXT,
  project TEXT,
  models TEXT,
  created_at ${big} NOT NULL,
  revoked_at ${big}
);
CREATE TABLE prices (
  model TEXT PRIMARY KEY,
  input ${real} NOT NULL,
  cached_input ${real},
  output ${real} NOT NULL,
  updated_at ${big} NOT NULL
);
CREATE TABLE usage_records (
  id ${autoId},
  time ${big} NOT NULL,
  key_id TEXT NOT NULL,
  organization TEXT,
  project TEXT,
  model TEXT NOT NULL,
  provider TEXT NOT NULL,
  trace_id TEXT NOT NULL,
  idempotency_key TEXT,
  input_tokens ${big} NOT NULL,
  cached_input_tokens ${big} NOT NULL,
  output_tokens ${big} NOT NULL,
  cost ${money} NOT NULL,
  price_input ${real},
  price_cached_input ${real},
  price_output ${real},
  estimated INTEGER NOT NULL
);
CREATE INDEX usage_records_time ON usage_records(time);
CREATE INDEX usage_records_org_time ON usage_records(organization, time);
`

/**
 * A call is charged once: its trace id (the request id, a random UUID) is unique among usage
 * records, so a charge written again (a retry after a connection lost mid-commit) changes nothing.
 */
const TRACE_UNIQUE = 'CREATE UNIQUE INDEX usage_records_trace ON usage_records(trace_id);'


/**
 * Cache writes get their own rate (a price's `cacheWrite`; NULL: the input rate), in the prices and
 * in the price a usage record applied.
 */
const CACHE_WRITE_PRICE = (real: string): string => `
ALTER TABLE prices ADD COLUMN cache_write ${real};
ALTER TABLE usage_records ADD COLUMN price_cache_write ${real};
`

/**
 * One-hour cache writes get a rate of their own (a price's `cacheWrite1h`; NULL: the cache-write
 * rate), in the prices and in the price a usage record applied; a usage record keeps the cache
 * writes it was billed for, and how many of them were one-hour ones (NULL: a record from before).
 */
const CACHE_WRITE_1H = (real: string, big: string): string => `
ALTER TABLE prices ADD COLUMN cache_write_1h ${real};
ALTER TABLE usage_records ADD COLUMN price_cache_write_1h ${real};
ALTER TABLE usage_records ADD COLUMN cache_write_tokens ${big};
ALTER TABLE usage_records ADD COLUMN cache_write_1h_tokens ${big};
`

/**
 * The balance journal (every change of a balance, with its actor, in the transaction that makes
 * it) and the audit log (every admin write, with its actor, the record before and after, and how
 * it ended). Organizations that exist get one `migration` row each, amount = balance + Σ charges,
 * so balance = Σ journal − Σ charges holds from here on. `lock` keeps charges and top-ups out
 * while those rows are computed (PostgreSQL; SQLite's migration holds the write lock).
 */
const JOURNAL = (money: string, big: string, autoId: string, now: string, lock: string): string => `${lock}
CREATE TABLE balance_journal (
  id ${autoId},
  organization TEXT NOT NULL REFERENCES organizations(id),
  kind TEXT NOT NULL,
  amount ${money} NOT NULL,
  balance ${money} NOT NULL,
  actor TEXT NOT NULL,
  reason TEXT,
  trace_id TEXT,
  time ${big} NOT NULL
);
CREATE INDEX balance_journal_org ON balance_journal(organization, id);
CREATE INDEX balance_journal_trace ON balance_journal(trace_id) WHERE trace_id IS NOT NULL;
CREATE TABLE audit_log (
  id ${autoId},
  time ${big} NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  before TEXT,
  after TEXT,
  result TEXT NOT NULL,
  status INTEGER
);
CREATE INDEX audit_log_time ON audit_log(time);
CREATE INDEX audit_log_actor ON audit_log(actor, id);
CREATE INDEX audit_log_action ON audit_log(action, id);
CREATE INDEX audit_log_target ON audit_log(target, id);
${openingRowsSql(now)}
`

/**
 * Virtual keys: per ledger key an expiry, tags, a budget per window and over its life, rate
 * limits, the last-used time, the previous secret of a rotation with its grace time, and what the
 * key has spent (lifetime, and in its current budget window), counted by every charge from here
 * on; existing keys start with the cost of their usage records so far. `same` compares two
 * nullable columns (organization) in the dialect's syntax.
 */
const KEY_SETTINGS = (money: string, big: string, same: string): string => `
ALTER TABLE api_keys ADD COLUMN expires_at ${big};
ALTER TABLE api_keys ADD COLUMN tags TEXT;
ALTER TABLE api_keys ADD COLUMN budget_amount ${money};
ALTER TABLE api_keys ADD COLUMN budget_window TEXT;
ALTER TABLE api_keys ADD COLUMN lifetime_budget ${money};
ALTER TABLE api_keys ADD COLUMN rpm ${big};
ALTER TABLE api_keys ADD COLUMN tpm ${big};
ALTER TABLE api_keys ADD COLUMN last_used_at ${big};
ALTER TABLE api_keys ADD COLUMN previous_hash TEXT;
ALTER TABLE api_keys ADD COLUMN previous_valid_until ${big};
ALTER TABLE api_keys ADD COLUMN rotated_at ${big};
ALTER TABLE api_keys ADD COLUMN spent ${money} NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN window_start ${big};
ALTER TABLE api_keys ADD COLUMN window_spent ${money} NOT NULL DEFAULT 0;
CREATE INDEX api_keys_previous_hash ON api_keys(previous_hash);
UPDATE api_keys SET spent = coalesce((SELECT sum(u.cost) FROM usage_records u WHERE u.key_id = api_keys.id AND ${same.replace('$a', 'u.organization').replace('$b', 'api_keys.organization')}), 0);
`

/** The databases' clocks in ms. */
const SQLITE_NOW = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
const PG_NOW = '(extract(epoch from clock_timestamp()) * 1000)::bigint'

export const SQLITE_MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'initial', sql: common('INTEGER', 'INTEGER', 'REAL', 'INTEGER PRIMARY KEY AUTOINCREMENT') },
  { version: 2, name: 'one usage record per trace id', sql: TRACE_UNIQUE },
  { version: 3, name: 'a cache-write rate in prices and usage records', sql: CACHE_WRITE_PRICE('REAL') },
  { version: 4, name: 'the balance journal and the audit log', sql: JOURNAL('INTEGER', 'INTEGER', 'INTEGER PRIMARY KEY AUTOINCREMENT', SQLITE_NOW, '') },
  { version: 5, name: 'virtual keys: expiry, tags, budgets, rate limits, last use, rotation', sql: KEY_SETTINGS('INTEGER', 'INTEGER', '$a IS $b') },
  { version: 6, name: 'a one-hour cache-write rate in prices and usage records; usage records keep their cache writes', sql: CACHE_WRITE_1H('REAL', 'INTEGER') },
]

export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'initial', sql: common('BIGINT', 'BIGINT', 'DOUBLE PRECISION', 'BIGSERIAL PRIMARY KEY') },
  { version: 2, name: 'one usage record per trace id', sql: TRACE_UNIQUE },
  { version: 3, name: 'holds: one row per reservation, with an expiry', sql: PG_HOLDS },
  { version: 4, name: 'slices: a replica leases part of a balance as one growing hold', sql: PG_LEASE },
  { version: 5, name: 'a cache-write rate in prices and usage records', sql: CACHE_WRITE_PRICE('DOUBLE PRECISION') },
  {
    version: 6, name: 'the balance journal and the audit log',
    sql: JOURNAL('BIGINT', 'BIGINT', 'BIGSERIAL PRIMARY KEY', PG_NOW, 'LOCK TABLE organizations, usage_records IN SHARE MODE;'),
  },
  {
    version: 7, name: 'virtual keys: expiry, tags, budgets, rate limits, last use, rotation, key holds',
    sql: 'LOCK TABLE usage_records IN SHARE MODE;' + KEY_SETTINGS('BIGINT', 'BIGINT', '$a IS NOT DISTINCT FROM $b') + PG_KEY_HOLDS,
  },
  { version: 8, name: 'holds: decided under a lock of their own, not the organization row charges take; the reserves of one turn in one statement', sql: PG_ORG_LOCK },
  { version: 9, name: 'key holds: decided under a lock of their own, not the key row charges take', sql: PG_KEY_LOCK },
  { version: 10, name: 'a one-hour cache-write rate in prices and usage records; usage records keep their cache writes', sql: CACHE_WRITE_1H('DOUBLE PRECISION', 'BIGINT') },
]
