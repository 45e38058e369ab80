/**
 * @module ledger/migrations – versioned schema changes, one list per dialect. Append only: a
 * released migration is never edited; a change is a new version.
 */
import { openingRowsSql } from './journal.ts'

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

/**
 * Slices (the balance plugin's lease mode): one hold row per replica and organization that the
 * replica grows and shrinks, instead of one row per call. `gw_lease` grows hold `p_id` (creating
 * it when missing, restarting it when it has expired) under the organization's row lock, like
 * gw_reserve: it grants nothing when less than `p_min` is available, else the least of `p_want`
 * and half of what is available, but never less than `p_min`, so each replica's slice leaves
 * money for the others and the sum of holds never exceeds the balance. Returns
 * [granted, the hold's amount after, what is still available after].
 */
const PG_LEASE = `
CREATE FUNCTION gw_lease (p_id TEXT, p_org TEXT, p_want BIGINT, p_min BIGINT, p_ttl_ms BIGINT, p_owner TEXT) RETURNS BIGINT[]
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  v_balance BIGINT;
  v_held BIGINT;
  v_now BIGINT;
  v_avail BIGINT;
  v_grant BIGINT;
  v_total BIGINT;
BEGIN
  SELECT balance INTO v_balance FROM organizations WHERE id = p_org FOR UPDATE;
  IF NOT FOUND THEN RETURN NULL; END IF;
  v_now := (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
  SELECT coalesce(sum(amount), 0) INTO v_held FROM holds WHERE organization = p_org AND expires_at > v_now;
  v_avail := v_balance - v_held;
  IF v_avail < p_min OR p_want <= 0 THEN RETURN ARRAY[0, coalesce((SELECT amount FROM holds WHERE id = p_id AND expires_at > v_now), 0), v_avail]; END IF;
  v_grant := GREATEST(p_min, LEAST(p_want, v_avail / 2));
  INSERT INTO holds AS h (id, organization, amount, created_at, expires_at, owner, trace_id)
  VALUES (p_id, p_org, v_grant, v_now, v_now + p_ttl_ms, p_owner, 'slice')
  ON CONFLICT (id) DO UPDATE SET
    amount = CASE WHEN h.expires_at > v_now THEN h.amount + EXCLUDED.amount ELSE EXCLUDED.amount END,
    expires_at = GREATEST(h.expires_at, EXCLUDED.expires_at)
  RETURNING amount INTO v_total;
  RETURN ARRAY[v_grant, v_total, v_avail - v_grant];
END
$$;
`

/**
 * Cache writes get their own rate (a price's `cacheWrite`; NULL: the input rate), in the prices and
 * in the price a usage record applied.
 */
const CACHE_WRITE_PRICE = (real: string): string => `
ALTER TABLE prices ADD COLUMN cache_write ${real};
ALTER TABLE usage_records ADD COLUMN price_cache_write ${real};
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

/**
 * PostgreSQL key holds: one row per call on a key with a budget, like `holds` (expiry, renewed by
 * the replica running the call, swept once expired). `gw_key_reserve` locks the key's row, sums
 * its live holds after the lock (a statement of its own, as gw_reserve) and inserts the hold when
 * spent + held + amount stays within the lifetime budget and, in the window starting at `p_ws`,
 * within the window budget (a window the row has not reached yet counts 0). Returns ok, lifetime,
 * window or unknown.
 */
const PG_KEY_HOLDS = `
CREATE TABLE key_holds (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  amount BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  owner TEXT,
  trace_id TEXT
);
CREATE INDEX key_holds_key_expiry ON key_holds (key_id, expires_at) INCLUDE (amount);
CREATE INDEX key_holds_expiry ON key_holds (expires_at);
CREATE FUNCTION gw_key_reserve (p_id TEXT, p_key TEXT, p_amount BIGINT, p_ttl_ms BIGINT, p_owner TEXT, p_trace TEXT, p_ws BIGINT) RETURNS TEXT
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  k RECORD;
  v_held BIGINT;
  v_now BIGINT;
  v_window BIGINT;
BEGIN
  SELECT spent, window_start, window_spent, budget_amount, lifetime_budget INTO k FROM api_keys WHERE id = p_key FOR UPDATE;
  IF NOT FOUND THEN RETURN 'unknown'; END IF;
  v_now := (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
  SELECT coalesce(sum(amount), 0) INTO v_held FROM key_holds WHERE key_id = p_key AND expires_at > v_now;
  IF k.lifetime_budget IS NOT NULL AND k.spent + v_held + p_amount > k.lifetime_budget THEN RETURN 'lifetime'; END IF;
  v_window := CASE WHEN k.window_start IS NULL OR k.window_start < p_ws THEN 0 ELSE k.window_spent END;
  IF k.budget_amount IS NOT NULL AND p_ws IS NOT NULL AND v_window + v_held + p_amount > k.budget_amount THEN RETURN 'window'; END IF;
  INSERT INTO key_holds (id, key_id, amount, created_at, expires_at, owner, trace_id) VALUES (p_id, p_key, p_amount, v_now, v_now + p_ttl_ms, p_owner, p_trace);
  RETURN 'ok';
END
$$;
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
]
