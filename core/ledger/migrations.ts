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

/**
 * PostgreSQL holds: one row per reservation with an expiry (ms on the database's clock), instead
 * of one `reserved` counter per organization that a crashed replica could strand. What is
 * available = balance − Σ unexpired holds. `gw_reserve` checks and inserts under the organization's
 * row lock; it sums after taking the lock, in a statement of its own (so on a snapshot that sees
 * every hold committed before the lock was granted), which one SQL statement could not do. The
 * old counter is zeroed: holds of calls in flight during the upgrade are forgotten.
 */
const PG_HOLDS = `
CREATE TABLE holds (
  id TEXT PRIMARY KEY,
  organization TEXT NOT NULL,
  amount BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  owner TEXT,
  trace_id TEXT
);
CREATE INDEX holds_org_expiry ON holds (organization, expires_at) INCLUDE (amount);
CREATE INDEX holds_expiry ON holds (expires_at);
UPDATE organizations SET reserved = 0 WHERE reserved <> 0;
CREATE FUNCTION gw_reserve (p_id TEXT, p_org TEXT, p_amount BIGINT, p_ttl_ms BIGINT, p_owner TEXT, p_trace TEXT) RETURNS BOOLEAN
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  v_balance BIGINT;
  v_held BIGINT;
  v_now BIGINT;
BEGIN
  SELECT balance INTO v_balance FROM organizations WHERE id = p_org FOR UPDATE;
  IF NOT FOUND THEN RETURN FALSE; END IF;
  v_now := (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
  SELECT coalesce(sum(amount), 0) INTO v_held FROM holds WHERE organization = p_org AND expires_at > v_now;
  IF v_balance - v_held < p_amount THEN RETURN FALSE; END IF;
  INSERT INTO holds (id, organization, amount, created_at, expires_at, owner, trace_id)
  VALUES (p_id, p_org, p_amount, v_now, v_now + p_ttl_ms, p_owner, p_trace);
  RETURN TRUE;
END
$$;
`

export const SQLITE_MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'initial', sql: common('INTEGER', 'INTEGER', 'REAL', 'INTEGER PRIMARY KEY AUTOINCREMENT') },
  { version: 2, name: 'one usage record per trace id', sql: TRACE_UNIQUE },
]

export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'initial', sql: common('BIGINT', 'BIGINT', 'DOUBLE PRECISION', 'BIGSERIAL PRIMARY KEY') },
  { version: 2, name: 'one usage record per trace id', sql: TRACE_UNIQUE },
  { version: 3, name: 'holds: one row per reservation, with an expiry', sql: PG_HOLDS },
]
