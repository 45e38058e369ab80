/** @module ledger/migrations-postgres – the PostgreSQL-only schema changes (holds and their functions), in the order migrations.ts applies them. Append only, as there. */

/**
 * PostgreSQL holds: one row per reservation with an expiry (ms on the database's clock), instead
 * of one `reserved` counter per organization that a crashed replica could strand. What is
 * available = balance − Σ unexpired holds. `gw_reserve` checks and inserts under the organization's
 * row lock; it sums after taking the lock, in a statement of its own (so on a snapshot that sees
 * every hold committed before the lock was granted), which one SQL statement could not do. The
 * old counter is zeroed: holds of calls in flight during the upgrade are forgotten.
 */
export const PG_HOLDS = `
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

/** gw_lease's grant once `v_avail` is known (migrations 4 and 8): the slice grows, or nothing. */
const LEASE_GRANT = `  IF v_avail < p_min OR p_want <= 0 THEN RETURN ARRAY[0, coalesce((SELECT amount FROM holds WHERE id = p_id AND expires_at > v_now), 0), v_avail]; END IF;
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
 * Slices (the balance plugin's lease mode): one hold row per replica and organization that the
 * replica grows and shrinks, instead of one row per call. `gw_lease` grows hold `p_id` (creating
 * it when missing, restarting it when it has expired) under the organization's row lock, like
 * gw_reserve: it grants nothing when less than `p_min` is available, else the least of `p_want`
 * and half of what is available, but never less than `p_min`, so each replica's slice leaves
 * money for the others and the sum of holds never exceeds the balance. Returns
 * [granted, the hold's amount after, what is still available after].
 */
export const PG_LEASE = `
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
${LEASE_GRANT}`

/**
 * PostgreSQL key holds: one row per call on a key with a budget, like `holds` (expiry, renewed by
 * the replica running the call, swept once expired). `gw_key_reserve` locks the key's row, sums
 * its live holds after the lock (a statement of its own, as gw_reserve) and inserts the hold when
 * spent + held + amount stays within the lifetime budget and, in the window starting at `p_ws`,
 * within the window budget (a window the row has not reached yet counts 0). Returns ok, lifetime,
 * window or unknown.
 */
export const PG_KEY_HOLDS = `
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

/**
 * Migration 8: what decides a hold is serialized per organization by a transaction-level advisory
 * lock (ORG_LOCK: keyed by schema and organization), no longer by the organization's row
 * lock, which charges also take and hold until their synchronous commit reaches the disk: a
 * reserve queued behind that flush for nothing. `gw_reserve`, `gw_reserve_many` and `gw_lease`
 * take it, and so does every journal entry that lowers a balance; charges do not. After the lock
 * each reads the balance and the sum of live holds in ONE statement, so on one snapshot: a charge
 * (which drops its hold and debits the balance in one transaction) is seen whole or not at all.
 * One not yet seen still counts its hold instead of its cost, which never shows more available
 * unless the call cost more than it held; then by at most that excess, as when the reserve had
 * come just before the charge. Other reserves of the organization, on any replica, are seen:
 * the lock is granted only once their transaction committed.
 *
 * `gw_reserve_many`: the reserves a replica makes in the same moment, in one statement: each
 * organization locked once, in order of id, its live holds summed once, then every reserve of it
 * in the order given, exactly as that many `gw_reserve` calls in a row would decide them (one
 * that does not fit is refused and the next may still fit). Returns one boolean per reserve.
 * It also carries the replica's resizes not yet in the database (a hold shrunk to its call's
 * cost), each applied under its organization's lock before that organization's reserves are
 * decided: a reserve never misses a shrink its replica made before it. Reserves never wait for a
 * row lock (resizes skip locked holds), so no charge or journal entry can wait for one in a cycle.
 */
/**
 * The organization's hold lock, until the transaction ends (in the functions below, and in the
 * journal's statement, where the connection's search_path is the ledger's schema as well).
 */
export const ORG_LOCK = (org: string): string => `pg_advisory_xact_lock(hashtextextended('gw_org:' || current_schema() || ':' || ${org}, 0))`
const AVAILABLE = (org: string): string =>
  `SELECT o.balance - (SELECT coalesce(sum(h.amount), 0) FROM holds h WHERE h.organization = o.id AND h.expires_at > v_now) INTO v_avail FROM organizations o WHERE o.id = ${org};`
/**
 * Sets the holds of p_resize_ids to p_resize_amounts (those `where` picks). A hold whose row is
 * locked is skipped: only a charge or release deleting it (then there is nothing to resize) or
 * another statement setting it to the same amount lock a hold, and waiting for either could only
 * queue behind its commit (gw_reserve_many counts the carried amounts whatever this applied).
 */
export const RESIZE = (where: string): string => `UPDATE holds h SET amount = v.amount
    FROM unnest(p_resize_ids, p_resize_orgs, p_resize_amounts) AS v (id, org, amount)
    WHERE ${where}h.id = v.id AND h.id IN (SELECT l.id FROM holds l WHERE l.id = ANY (p_resize_ids) FOR UPDATE SKIP LOCKED);`
/**
 * gw_reserve_many's: as AVAILABLE, each carried resize counting at its new amount whether or not
 * its UPDATE applied: a hold another statement setting it to that amount has locked (its
 * commit not seen yet) was skipped.
 */
const AVAILABLE_RESIZED = `SELECT o.balance - (SELECT coalesce(sum(coalesce(v.amount, h.amount)), 0) FROM holds h
      LEFT JOIN unnest(p_resize_ids, p_resize_amounts) AS v (id, amount) ON v.id = h.id
      WHERE h.organization = o.id AND h.expires_at > v_now) INTO v_avail FROM organizations o WHERE o.id = v_org;`
export const PG_ORG_LOCK = `
CREATE OR REPLACE FUNCTION gw_reserve (p_id TEXT, p_org TEXT, p_amount BIGINT, p_ttl_ms BIGINT, p_owner TEXT, p_trace TEXT) RETURNS BOOLEAN
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  v_avail BIGINT;
  v_now BIGINT;
BEGIN
  PERFORM ${ORG_LOCK('p_org')};
  v_now := (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
  ${AVAILABLE('p_org')}
  IF NOT FOUND OR v_avail < p_amount THEN RETURN FALSE; END IF;
  INSERT INTO holds (id, organization, amount, created_at, expires_at, owner, trace_id)
  VALUES (p_id, p_org, p_amount, v_now, v_now + p_ttl_ms, p_owner, p_trace);
  RETURN TRUE;
END
$$;
CREATE FUNCTION gw_reserve_many (p_ids TEXT[], p_orgs TEXT[], p_amounts BIGINT[], p_ttls_ms BIGINT[], p_owner TEXT, p_traces TEXT[],
  p_resize_ids TEXT[], p_resize_orgs TEXT[], p_resize_amounts BIGINT[]) RETURNS BOOLEAN[]
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  v_org TEXT;
  v_avail BIGINT;
  v_now BIGINT;
  v_out BOOLEAN[] := array_fill(FALSE, ARRAY[cardinality(p_ids)]);
BEGIN
  FOR v_org IN SELECT o FROM unnest(p_orgs) AS o UNION SELECT o FROM unnest(p_resize_orgs) AS o ORDER BY 1 LOOP
    PERFORM ${ORG_LOCK('v_org')};
    ${RESIZE('v.org = v_org AND ')}
    CONTINUE WHEN NOT (v_org = ANY (p_orgs));
    v_now := (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
    ${AVAILABLE_RESIZED}
    CONTINUE WHEN NOT FOUND;
    FOR i IN 1 .. cardinality(p_ids) LOOP
      IF p_orgs[i] = v_org AND p_amounts[i] <= v_avail THEN
        INSERT INTO holds (id, organization, amount, created_at, expires_at, owner, trace_id)
        VALUES (p_ids[i], v_org, p_amounts[i], v_now, v_now + p_ttls_ms[i], p_owner, p_traces[i]);
        v_avail := v_avail - p_amounts[i];
        v_out[i] := TRUE;
      END IF;
    END LOOP;
  END LOOP;
  RETURN v_out;
END
$$;
CREATE OR REPLACE FUNCTION gw_lease (p_id TEXT, p_org TEXT, p_want BIGINT, p_min BIGINT, p_ttl_ms BIGINT, p_owner TEXT) RETURNS BIGINT[]
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  v_now BIGINT;
  v_avail BIGINT;
  v_grant BIGINT;
  v_total BIGINT;
BEGIN
  PERFORM ${ORG_LOCK('p_org')};
  v_now := (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
  ${AVAILABLE('p_org')}
  IF NOT FOUND THEN RETURN NULL; END IF;
${LEASE_GRANT}`

/**
 * Migration 9: a key's budget holds, as migration 8 did for organizations. `gw_key_reserve` is
 * serialized per key by a transaction-level advisory lock (KEY_LOCK), no longer by the key's row
 * lock, which charges take (to count the key's spend) and hold until their synchronous commit
 * reaches the disk. After the lock it reads the key's spend and budgets and the sum of its live
 * holds in ONE statement, on one snapshot: a charge (which drops the call's hold and counts its
 * cost in one transaction) is seen whole or not at all; one not yet seen still counts its hold
 * instead of its cost. Other reserves of the key, on any replica, are seen: the lock is granted
 * only once their transaction committed. Nothing else lowers what a key may hold but a budget
 * edit, which is as though it came just after the reserve.
 */
export const KEY_LOCK = (key: string): string => `pg_advisory_xact_lock(hashtextextended('gw_key:' || current_schema() || ':' || ${key}, 0))`
export const PG_KEY_LOCK = `
CREATE OR REPLACE FUNCTION gw_key_reserve (p_id TEXT, p_key TEXT, p_amount BIGINT, p_ttl_ms BIGINT, p_owner TEXT, p_trace TEXT, p_ws BIGINT) RETURNS TEXT
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  k RECORD;
  v_now BIGINT;
  v_window BIGINT;
BEGIN
  PERFORM ${KEY_LOCK('p_key')};
  v_now := (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
  SELECT a.spent, a.window_start, a.window_spent, a.budget_amount, a.lifetime_budget,
    (SELECT coalesce(sum(h.amount), 0) FROM key_holds h WHERE h.key_id = a.id AND h.expires_at > v_now) AS held
    INTO k FROM api_keys a WHERE a.id = p_key;
  IF NOT FOUND THEN RETURN 'unknown'; END IF;
  IF k.lifetime_budget IS NOT NULL AND k.spent + k.held + p_amount > k.lifetime_budget THEN RETURN 'lifetime'; END IF;
  v_window := CASE WHEN k.window_start IS NULL OR k.window_start < p_ws THEN 0 ELSE k.window_spent END;
  IF k.budget_amount IS NOT NULL AND p_ws IS NOT NULL AND v_window + k.held + p_amount > k.budget_amount THEN RETURN 'window'; END IF;
  INSERT INTO key_holds (id, key_id, amount, created_at, expires_at, owner, trace_id) VALUES (p_id, p_key, p_amount, v_now, v_now + p_ttl_ms, p_owner, p_trace);
  RETURN 'ok';
END
$$;
`
