package sqllock

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// statements are a Client's SQL, made once for its dialect and table.
type statements struct {
	ddl       []string
	check     string // returns the durability setting, whether the table exists, and whether it is this version's
	checkArgs []any
	table     string // the quoted table name

	// PostgreSQL: a free lock is no row; insert takes it and remove lets
	// it go when nobody else is in the row, one plain statement each, and
	// one function call (call) takes, queues or releases (op), and hands
	// the lock on, when they find someone else (pgFast).
	call, insert, remove string
	// MySQL: the row is created once, then taken by an UPDATE.
	create, take, remaining, release string
	// Both. PostgreSQL's renewal sends no NOTIFY (to tell the queue's
	// head the new expiry, say): a NOTIFY has every session of the
	// database that LISTENs, on any channel, read the queue in a
	// transaction of its own, one per listening Client per renewal
	// (docs/benchmarks-sql.md, issue 34, third pass).
	renew string
}

// quote quotes each part of a table name as the dialect does.
func quote(d Dialect, parts []string) string {
	q := `"`
	if d == MySQL {
		q = "`"
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = q + p + q
	}
	return strings.Join(out, ".")
}

func newStatements(d Dialect, parts []string) statements {
	table := quote(d, parts)
	if d == MySQL {
		return mysqlStatements(table, parts)
	}
	fn := quote(d, suffixed(parts, "_op"))
	return statements{
		table: table,
		ddl: []string{
			fmt.Sprintf(pgTable, table),
			fmt.Sprintf(pgWaiterTTL, table),
			fmt.Sprintf(pgFunction, table, fn, pgClock, pgGrantLock),
		},
		check: `SELECT current_setting('synchronous_commit'), to_regclass($1) IS NOT NULL AND to_regprocedure($2) IS NOT NULL,
  EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'waiter_ttl' AND NOT attisdropped)`,
		checkArgs: []any{table, fn + "(text, text, text, bigint, bigint, bigint)"},
		call:      fmt.Sprintf(`SELECT code, n FROM %s($1, $2, $3, $4, $5, $6)`, fn),
		insert:    fmt.Sprintf(pgInsert, table, pgClock, pgGrantLock),
		remove:    fmt.Sprintf(pgDelete, table),
		renew:     fmt.Sprintf(`UPDATE %s SET expires_at = clock_timestamp() + $3 * interval '1 microsecond' WHERE name = $1 AND holder = $2`, table),
	}
}

// suffixed is parts with suffix added to the last: the name of an object
// that goes with the table, in its schema.
func suffixed(parts []string, suffix string) []string {
	out := append([]string(nil), parts...)
	out[len(out)-1] += suffix
	return out
}

// The PostgreSQL lease table: one row per lock name while it is held or
// waited for, deleted when it is let go with nobody waiting (a free lock
// is no row; its next token is floored by the clock, pgClock). holder
// is "channel/id" while held (the channel on which the holder's client
// hears grants; empty without a listener), and
// the queue of waiters is four arrays in arrival order: their entries,
// the expiry of each, the stamp of each one's last attempt, and the TTL
// of each one's lock in microseconds (a grant to it lasts that long:
// processes may lock one name with different TTLs).
const pgTable = `CREATE TABLE IF NOT EXISTS %s (
  name          text PRIMARY KEY,
  holder        text,
  token         bigint NOT NULL DEFAULT 0,
  expires_at    timestamptz NOT NULL DEFAULT '-infinity',
  waiters       text[] NOT NULL DEFAULT '{}',
  waiter_expiry timestamptz[] NOT NULL DEFAULT '{}',
  waiter_stamp  bigint[] NOT NULL DEFAULT '{}',
  waiter_ttl    bigint[] NOT NULL DEFAULT '{}'
)`

// pgWaiterTTL adds waiter_ttl to a table made by a version before it.
const pgWaiterTTL = `ALTER TABLE %s ADD COLUMN IF NOT EXISTS waiter_ttl bigint[] NOT NULL DEFAULT '{}'`

// pgClock is the server's clock in microseconds, the floor of every
// token: a row-less lock has no last token to go above, and a failover
// to a standby that lacks the latest grants (asynchronous replication)
// brings back a table without them, so tokens are above those grants'
// as long as the database's clock does not go back.
const pgClock = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`

// pgInsert takes a free lock (no row) for $2 for $3 microseconds, by the
// server's clock: it returns the token, or no row when the lock's row
// exists (held, expired, or waited for: the function decides). A
// concurrent insert of the same name makes it wait for that one's
// transaction and then do nothing; a concurrent delete of the row
// (pgDelete, or the function letting the lock go) that commits first
// lets it insert. The token is the server's clock (pgClock).
//
// It takes the name's grant lock (pgGrantLock) before it computes the
// token: the SELECT's projection needs l's row, so the lock is held
// before the clock is read, and until the statement's commit.
const pgInsert = `WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock(%[3]d, hashtext($1::text)))
INSERT INTO %[1]s (name, holder, token, expires_at)
  SELECT $1::text, $2::text, %[2]s, clock_timestamp() + $3::bigint * interval '1 microsecond' FROM l
  ON CONFLICT (name) DO NOTHING RETURNING token`

// pgGrantLock is the class id of the transaction-scoped advisory lock
// that every grant of a lock takes, keyed by the hash of the lock's
// name, before it reads the clock for its token: the plain INSERT, and
// every call of the function (first thing). It is the two-int form,
// whose key space the one-bigint form of pg_advisory_lock does not
// share: it can meet only a user's own two-int lock of this class, and
// then (as when two names hash alike) one waits for the other's
// statement, no more.
//
// Why it keeps tokens in grant order with no row to remember the last:
// an INSERT computes its row's values (the token) before PostgreSQL looks
// for a conflict, so without the lock an insert could compute a token,
// be descheduled while another client takes the lock (a higher token)
// and lets it go (its row deleted), then find no conflict and hold the
// lock with the lower token. With it, every grant holds the name's lock
// from before its token is read until its commit, so the grants of one
// name read their tokens in the order they commit, one after the
// other's commit. Between two such reads lie at least the earlier
// grant's commit and, before a row-less grant, the whole statement that
// deleted the row, far more than the clock's microsecond: the later
// token is above, whether it is the clock or one above the row's last
// (which is itself a clock reading or above one), unless the clock went
// back.
//
// Deletes do not take it (the uncontended release is a plain DELETE,
// as the seed's): a grant never needs a delete to wait. Nor can it
// deadlock: an insert that holds it waits only for a transaction that
// inserted, deleted or updated the row, and none of those waits for it
// while holding such a change (the function takes it before it touches
// the row).
const pgGrantLock = 0x7a6b7201

// pgDelete lets the lock $1 go if $2 holds it and nobody waits: it
// deletes the row, or nothing (the function then takes $2 out of the
// queue and hands the lock on, or finds it lost). A function call that
// queues a waiter meanwhile holds the row's lock: the DELETE waits for
// it, and PostgreSQL evaluates the WHERE again on the new row (READ
// COMMITTED's re-check), which now has a waiter, so nothing is deleted.
const pgDelete = `DELETE FROM %s WHERE name = $1 AND holder = $2 AND cardinality(waiters) = 0`

// pgFunction is every operation but the renewal, in one statement each,
// on the row locked FOR UPDATE; the clock is the server's
// (clock_timestamp(), read once the row is locked).
//
// op 'acquire' and 'queue': take the lock for p_me for p_ttl_us
// microseconds if it is free (or handed to p_me already: renewed); a free
// lock goes to the first live waiter first, which may be p_me, and a
// caller that does not queue never jumps the queue. Result (1, the new
// token), or (0, the holder's remaining microseconds); 'queue' then puts
// p_me at the end of the queue (or refreshes its entry: it keeps its
// place) for p_wait_us, with its stamp p_stamp and its TTL p_ttl_us, and
// returns code 2 in place of 0 when one live waiter is ahead of it (that
// one watches the holder's expiry), and 3 when two or more are: its
// entry then lives twice p_wait_us (a client before code 2 reads
// either as 0, one before code 3 reads 3 as 0, and refreshes its entry
// sooner than it needs to).
//
// The lock nobody waits for (an empty queue) is taken by one UPDATE, and
// let go by one DELETE, that do what the rest would do then, with no row
// lock before them: each locks the row itself, and a concurrent change
// makes PostgreSQL evaluate its WHERE again on the new row (clock
// included), which sends the call to the general path when someone
// queued meanwhile. Half the row writes of SELECT FOR UPDATE and UPDATE,
// and none of the PL/pgSQL steps between them. A lock with no row is
// free: the call inserts it, held (a concurrent insert of the name wins,
// and the call then locks that row, or inserts again if it went
// meanwhile).
//
// op 'release': take p_me out of the queue and, if it holds the lock,
// free it and hand it to the first live waiter: (1, n), or (0, n) when
// p_me did not hold it; n is 0 when the row was deleted (nobody left in
// it), 1 when it stays (a holder or waiters: a client before n reads
// neither).
//
// A grant to a waiter lasts the waiter's own TTL, from its queue entry,
// never the caller's: the waiter trusts its lease for its own TTL from
// the stamp of its last attempt, and a grant for a shorter one would let
// the row expire, and a third client take it, while it still trusts it.
// A grant is notified on the waiter's client's channel as
// "id token stamp". Tokens are one above the row's last, and never below
// the server's clock in microseconds (pgClock); a missing row's is the
// clock. A row with no holder and no waiters
// is deleted: a free lock is no row. Every call takes the name's grant
// lock first (pgGrantLock), before it reads a token.
const pgFunction = `CREATE OR REPLACE FUNCTION %[2]s(p_op text, p_name text, p_me text, p_ttl_us bigint, p_wait_us bigint, p_stamp bigint,
  OUT code int, OUT n bigint) LANGUAGE plpgsql AS $fn$
DECLARE
  r %[1]s%%ROWTYPE;
  t timestamptz;
  pos int;
BEGIN
  -- The name's grant lock, before any token is read (pgGrantLock).
  PERFORM pg_advisory_xact_lock(%[4]d, hashtext(p_name));
  -- The lock nobody waits for, in one UPDATE.
  IF p_op = 'release' THEN
    DELETE FROM %[1]s WHERE name = p_name AND holder = p_me AND cardinality(waiters) = 0;
    IF FOUND THEN code := 1; n := 0; RETURN; END IF;
  ELSE
    UPDATE %[1]s SET holder = p_me,
      token = greatest(token + 1, %[3]s),
      expires_at = clock_timestamp() + p_ttl_us * interval '1 microsecond'
      WHERE name = p_name AND cardinality(waiters) = 0 AND (holder IS NULL OR holder = p_me OR expires_at <= clock_timestamp())
      RETURNING token INTO n;
    IF FOUND THEN code := 1; RETURN; END IF;
  END IF;
  LOOP
    SELECT * INTO r FROM %[1]s WHERE name = p_name FOR UPDATE;
    EXIT WHEN FOUND;
    code := 0;
    n := 0;
    IF p_op = 'release' THEN RETURN; END IF;
    INSERT INTO %[1]s (name, holder, token, expires_at)
      VALUES (p_name, p_me, %[3]s, clock_timestamp() + p_ttl_us * interval '1 microsecond')
      ON CONFLICT (name) DO NOTHING RETURNING token INTO n;
    IF FOUND THEN code := 1; RETURN; END IF;
  END LOOP;
  t := clock_timestamp();
  code := 0;
  n := 0;
  -- A queue left by a version before waiter_ttl: its waiters' TTLs are
  -- not known, and their grants last the caller's, as they did then.
  IF cardinality(r.waiter_ttl) <> cardinality(r.waiters) THEN
    r.waiter_ttl := array_fill(NULL::bigint, ARRAY[cardinality(r.waiters)]);
  END IF;
  pos := array_position(r.waiters, p_me);
  IF pos IS NOT NULL AND p_op <> 'queue' THEN
    r.waiters := r.waiters[:pos-1] || r.waiters[pos+1:];
    r.waiter_expiry := r.waiter_expiry[:pos-1] || r.waiter_expiry[pos+1:];
    r.waiter_stamp := r.waiter_stamp[:pos-1] || r.waiter_stamp[pos+1:];
    r.waiter_ttl := r.waiter_ttl[:pos-1] || r.waiter_ttl[pos+1:];
    pos := NULL;
  END IF;
  IF p_op = 'release' THEN
    IF r.holder IS NOT DISTINCT FROM p_me THEN
      code := 1;
      r.holder := NULL;
    END IF;
  ELSIF r.holder IS NOT NULL AND r.holder <> p_me AND r.expires_at <= t THEN
    r.holder := NULL;
  END IF;
  -- A free lock goes to the first live waiter; those whose entry expired
  -- are dropped on the way.
  WHILE r.holder IS NULL AND cardinality(r.waiters) > 0 AND r.waiters[1] <> p_me LOOP
    IF r.waiter_expiry[1] > t THEN
      r.holder := r.waiters[1];
      r.token := greatest(r.token + 1, (extract(epoch FROM t) * 1000000)::bigint);
      r.expires_at := t + coalesce(r.waiter_ttl[1], p_ttl_us) * interval '1 microsecond';
      IF split_part(r.holder, '/', 1) <> '' THEN
        PERFORM pg_notify(split_part(r.holder, '/', 1), split_part(r.holder, '/', 2) || ' ' || r.token || ' ' || r.waiter_stamp[1]);
      END IF;
    END IF;
    r.waiters := r.waiters[2:];
    r.waiter_expiry := r.waiter_expiry[2:];
    r.waiter_stamp := r.waiter_stamp[2:];
    r.waiter_ttl := r.waiter_ttl[2:];
    IF pos IS NOT NULL THEN pos := pos - 1; END IF;
  END LOOP;
  IF p_op <> 'release' THEN
    IF r.holder IS NULL OR r.holder = p_me THEN
      r.holder := p_me;
      r.token := greatest(r.token + 1, (extract(epoch FROM t) * 1000000)::bigint);
      r.expires_at := t + p_ttl_us * interval '1 microsecond';
      IF pos IS NOT NULL THEN
        r.waiters := r.waiters[:pos-1] || r.waiters[pos+1:];
        r.waiter_expiry := r.waiter_expiry[:pos-1] || r.waiter_expiry[pos+1:];
        r.waiter_stamp := r.waiter_stamp[:pos-1] || r.waiter_stamp[pos+1:];
        r.waiter_ttl := r.waiter_ttl[:pos-1] || r.waiter_ttl[pos+1:];
      END IF;
      code := 1;
      n := r.token;
    ELSE
      n := greatest((extract(epoch FROM r.expires_at - t) * 1000000)::bigint, 0);
      IF p_op = 'queue' THEN
        IF pos IS NULL THEN
          r.waiters := r.waiters || p_me;
          r.waiter_expiry := r.waiter_expiry || (t + p_wait_us * interval '1 microsecond');
          r.waiter_stamp := r.waiter_stamp || p_stamp;
          r.waiter_ttl := r.waiter_ttl || p_ttl_us;
        ELSE
          r.waiter_expiry[pos] := t + p_wait_us * interval '1 microsecond';
          r.waiter_stamp[pos] := p_stamp;
          r.waiter_ttl[pos] := p_ttl_us;
        END IF;
        FOR i IN 1 .. coalesce(pos, cardinality(r.waiters)) - 1 LOOP
          IF r.waiter_expiry[i] > t THEN
            IF code = 2 THEN code := 3; EXIT; END IF;
            code := 2;
          END IF;
        END LOOP;
        -- Two or more live waiters ahead: the entry lives twice as long
        -- (farTTL), and its waiter refreshes it less often.
        IF code = 3 THEN
          r.waiter_expiry[coalesce(pos, cardinality(r.waiters))] := t + 2 * p_wait_us * interval '1 microsecond';
        END IF;
      END IF;
    END IF;
  END IF;
  IF r.holder IS NULL AND cardinality(r.waiters) = 0 THEN
    DELETE FROM %[1]s WHERE name = p_name;
    IF p_op = 'release' THEN n := 0; END IF;
    RETURN;
  END IF;
  IF p_op = 'release' THEN n := 1; END IF;
  UPDATE %[1]s SET holder = r.holder, token = r.token, expires_at = r.expires_at,
    waiters = r.waiters, waiter_expiry = r.waiter_expiry, waiter_stamp = r.waiter_stamp,
    waiter_ttl = r.waiter_ttl
    WHERE name = p_name;
END
$fn$`

// The MySQL lease table: one row per lock name (bytes, compared as such),
// never deleted; expires_at is UTC by the server's clock.
const mysqlTable = `CREATE TABLE IF NOT EXISTS %s (
  name       VARBINARY(255) NOT NULL PRIMARY KEY,
  holder     VARBINARY(64) NULL,
  token      BIGINT NOT NULL,
  expires_at DATETIME(6) NOT NULL
) ENGINE=InnoDB`

// mysqlNow is the server's clock, UTC, whatever the session's time zone;
// one value per statement.
const mysqlNow = `UTC_TIMESTAMP(6)`

func mysqlStatements(table string, parts []string) statements {
	schema, name := "", parts[len(parts)-1]
	if len(parts) == 2 {
		schema = parts[0]
	}
	floor := `TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ` + mysqlNow + `)`
	return statements{
		table: table,
		ddl:   []string{fmt.Sprintf(mysqlTable, table)},
		check: `SELECT CAST(@@innodb_flush_log_at_trx_commit AS CHAR), COUNT(*) > 0, TRUE FROM information_schema.TABLES
  WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?`,
		checkArgs: []any{schema, name},
		create:    fmt.Sprintf(`INSERT IGNORE INTO %s (name, holder, token, expires_at) VALUES (?, NULL, 0, '1970-01-01 00:00:01')`, table),
		// Taken when let go, or expired, more than its grace ago (the
		// first argument is the grace of a row let go: 0 for the holder
		// of the companion, the TTL for others; the second that of an
		// expired row: 0, or the TTL for a waiter behind the queue's
		// head, see companion), or ours already (an attempt whose reply
		// was lost): the assignments run left to right, so holder first,
		// and the others test the new holder. The token is returned as
		// the statement's LAST_INSERT_ID, in its reply: 0 when not
		// taken. A free row's expires_at is when it was let go.
		take: fmt.Sprintf(`UPDATE %[1]s SET
  holder = IF(expires_at <= %[2]s - INTERVAL IF(holder IS NULL, ?, ?) MICROSECOND OR holder = ?, ?, holder),
  token = IF(holder = ?, LAST_INSERT_ID(GREATEST(token + 1, %[3]s)), token),
  expires_at = IF(holder = ?, %[2]s + INTERVAL ? MICROSECOND, expires_at)
  WHERE name = ?`, table, mysqlNow, floor),
		remaining: fmt.Sprintf(`SELECT GREATEST(TIMESTAMPDIFF(MICROSECOND, %[2]s, expires_at + INTERVAL IF(holder IS NULL, ?, 0) MICROSECOND), 0) FROM %[1]s WHERE name = ?`, table, mysqlNow),
		release:   fmt.Sprintf(`UPDATE %s SET holder = NULL, expires_at = %s WHERE name = ? AND holder = ?`, table, mysqlNow),
		renew:     fmt.Sprintf(`UPDATE %s SET expires_at = %s + INTERVAL ? MICROSECOND WHERE name = ? AND holder = ?`, table, mysqlNow),
	}
}

// companionName is the GET_LOCK name of a MySQL lock (at most 64
// characters): a hash of the table and the lock's name.
func companionName(table, name string) string {
	sum := sha256.Sum256([]byte(table + "\x00" + name))
	return "zkrecipes:" + hex.EncodeToString(sum[:20])
}

// headName is the GET_LOCK name of a MySQL lock's queue head (at most 64
// characters): the companion's hash, under a prefix of its own.
func headName(table, name string) string {
	sum := sha256.Sum256([]byte(table + "\x00" + name))
	return "zkrecipes-head:" + hex.EncodeToString(sum[:20])
}
