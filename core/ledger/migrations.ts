/**
 * @module ledger/migrations – versioned schema changes, one list per dialect. Append only: a
 * released migration is never edited; a change is a new version.
 */
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

export const SQLITE_MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'initial', sql: common('INTEGER', 'INTEGER', 'REAL', 'INTEGER PRIMARY KEY AUTOINCREMENT') },
  { version: 2, name: 'one usage record per trace id', sql: TRACE_UNIQUE },
]

export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'initial', sql: common('BIGINT', 'BIGINT', 'DOUBLE PRECISION', 'BIGSERIAL PRIMARY KEY') },
  { version: 2, name: 'one usage record per trace id', sql: TRACE_UNIQUE },
]
