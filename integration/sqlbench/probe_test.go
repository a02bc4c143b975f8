package sqlbench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSQLProbeUncontended: where sqllock's uncontended time goes on
// PostgreSQL, the seed table and sqllock beside the statements sqllock's
// one-UPDATE path runs, sent in other ways, alternating as
// SQLUncontended does (same table):
//
//   - probe-fn: the function called directly as sqllock calls it (no
//     lease, no watchdog);
//   - probe-cte: the take and the release as one plain statement each,
//     the function called only when its UPDATE changed no row (a
//     data-modifying WITH, the function behind a one-time filter);
//   - probe-update: its two UPDATEs (take: free, expired or ours, with
//     the empty queue, the token and the clock; release) sent as plain
//     statements on the lease table;
//   - probe-narrow: the same on a table of the four columns the free
//     state needs (no queue arrays);
//   - probe-holder: the least an UPDATE can do (holder set and cleared,
//     no token, no clock) on the narrow table;
//   - probe-insert: sqllock's plain INSERT and DELETE (a free lock is no
//     row), sent with no lease and no watchdog;
//   - probe-insert-narrow: the same on the narrow table (no queue
//     arrays in the row);
//   - probe-seed-exec: the seed's INSERT and DELETE on the narrow table,
//     the INSERT sent by Exec as the seed sends it (no token);
//   - probe-seed-returning: the same INSERT returning the token, by
//     QueryRow as sqllock sends its INSERT (database/sql then watches
//     the context with a goroutine of its own, which Exec does not);
//   - probe-seed-nocancel: the same with a context that cannot be
//     cancelled (no such goroutine; not a choice a lock can make, its
//     statements must end with their context).
//
// None keeps the lock's promises: they are measures, not locks.
func BenchmarkSQLProbeUncontended(b *testing.B) {
	s := startServer(b, Postgres)
	ctx := bounded(b, benchLimit)
	if _, err := s.admin.ExecContext(ctx, probeNarrowDDL); err != nil {
		b.Fatal(err)
	}
	impls := []impl{seedImpl(Postgres), sqllockImpl(Postgres)}
	for _, v := range probeVariants {
		impls = append(impls, probeImpl(v))
	}
	uncontended(b, s, impls)
}

const probeNarrowDDL = `CREATE TABLE IF NOT EXISTS probe_narrow (
  name       text PRIMARY KEY,
  holder     text,
  token      bigint NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL DEFAULT '-infinity'
)`

// probeVariant is a take and a release, each one statement whose
// arguments are the name, the holder and the TTL in µs; take returns a
// row when it took the lock.
type probeVariant struct {
	name, create, take, release string
	// How take is sent: by Exec (no token), or by QueryRow with a
	// context that cannot be cancelled.
	exec, noCancel bool
}

const (
	probeTake = `UPDATE %s SET holder = $2,
  token = greatest(token + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint),
  expires_at = clock_timestamp() + $3 * interval '1 microsecond'
  WHERE name = $1 AND %s (holder IS NULL OR holder = $2 OR expires_at <= clock_timestamp())
  RETURNING token`
	probeRelease = `UPDATE %s SET holder = NULL WHERE name = $1 AND holder = $2 AND %s $3::bigint > 0`
)

var probeVariants = []probeVariant{
	{name: "probe-fn", create: "",
		take:    `SELECT n FROM zkrecipes_locks_op('acquire', $1, $2, $3::bigint, $3::bigint * 3, 0) WHERE code = 1`,
		release: `SELECT n FROM zkrecipes_locks_op('release', $1, $2, $3::bigint, $3::bigint * 3, 0) WHERE code = 1`},
	{name: "probe-cte", create: "",
		take: `WITH fast AS (UPDATE zkrecipes_locks SET holder = $2::text,
    token = greatest(token + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint),
    expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond'
    WHERE name = $1::text AND cardinality(waiters) = 0 AND (holder IS NULL OR holder = $2::text OR expires_at <= clock_timestamp())
    RETURNING 1 AS code, token AS n)
  SELECT n FROM (SELECT code, n FROM fast
    UNION ALL SELECT code, n FROM zkrecipes_locks_op('acquire', $1::text, $2::text, $3::bigint, $3::bigint * 3, 0) WHERE NOT EXISTS (SELECT FROM fast)) x
  WHERE code = 1`,
		release: `WITH fast AS (UPDATE zkrecipes_locks SET holder = NULL
    WHERE name = $1::text AND holder = $2::text AND cardinality(waiters) = 0 RETURNING 1 AS code, 0::bigint AS n)
  SELECT n FROM (SELECT code, n FROM fast
    UNION ALL SELECT code, n FROM zkrecipes_locks_op('release', $1::text, $2::text, $3::bigint, $3::bigint * 3, 0) WHERE NOT EXISTS (SELECT FROM fast)) x
  WHERE code = 1`},
	{name: "probe-update", create: `INSERT INTO zkrecipes_locks (name) VALUES ($1) ON CONFLICT DO NOTHING`,
		take:    fmt.Sprintf(probeTake, "zkrecipes_locks", "cardinality(waiters) = 0 AND"),
		release: fmt.Sprintf(probeRelease, "zkrecipes_locks", "cardinality(waiters) = 0 AND")},
	{name: "probe-narrow", create: `INSERT INTO probe_narrow (name) VALUES ($1) ON CONFLICT DO NOTHING`,
		take:    fmt.Sprintf(probeTake, "probe_narrow", ""),
		release: fmt.Sprintf(probeRelease, "probe_narrow", "")},
	{name: "probe-holder", create: `INSERT INTO probe_narrow (name) VALUES ($1) ON CONFLICT DO NOTHING`,
		take:    `UPDATE probe_narrow SET holder = $2 WHERE name = $1 AND holder IS NULL AND $3::bigint > 0 RETURNING token`,
		release: `UPDATE probe_narrow SET holder = NULL WHERE name = $1 AND holder = $2 AND $3::bigint > 0`},
	{name: "probe-insert", create: "",
		take:    fmt.Sprintf(probeInsert, "zkrecipes_locks"),
		release: fmt.Sprintf(probeDelete, "zkrecipes_locks", "cardinality(waiters) = 0 AND")},
	{name: "probe-insert-narrow", create: "",
		take:    fmt.Sprintf(probeInsert, "probe_narrow"),
		release: fmt.Sprintf(probeDelete, "probe_narrow", "")},
	{name: "probe-seed-exec", exec: true,
		take:    probeSeedInsert,
		release: probeSeedDelete},
	{name: "probe-seed-returning",
		take:    probeSeedInsert + ` RETURNING token`,
		release: probeSeedDelete},
	{name: "probe-seed-nocancel", noCancel: true,
		take:    probeSeedInsert + ` RETURNING token`,
		release: probeSeedDelete},
}

// The seed's statements on the narrow table, with the probes' arguments.
const (
	probeSeedInsert = `INSERT INTO probe_narrow (name, holder, expires_at) VALUES ($1, $2, now() + $3 * interval '1 microsecond')`
	probeSeedDelete = `DELETE FROM probe_narrow WHERE name = $1 AND $2::text <> '' AND $3::bigint > 0`
)

// probeInsert is sqllock's take of a lock with no row.
const probeInsert = `WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock(2053861889, hashtext($1::text)))
INSERT INTO %s (name, holder, token, expires_at)
  SELECT $1::text, $2::text, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, clock_timestamp() + $3::bigint * interval '1 microsecond' FROM l
  ON CONFLICT (name) DO NOTHING RETURNING token`

// probeDelete is sqllock's release of a lock nobody waits for.
const probeDelete = `DELETE FROM %s WHERE name = $1 AND holder = $2 AND %s $3::bigint > 0`

func probeImpl(v probeVariant) impl {
	return impl{name: v.name, kind: Postgres,
		open: func(ctx context.Context, dsn, name string, sent *atomic.Int64) (client, error) {
			db, err := OpenDB(Postgres, dsn, sent)
			if err != nil {
				return nil, err
			}
			c := &probeClient{db: db, v: v, name: v.name + "-" + name, me: rand.Text()}
			if v.create != "" {
				if _, err := db.ExecContext(ctx, v.create, c.name); err != nil {
					return nil, errors.Join(err, db.Close())
				}
			}
			return c, nil
		}}
}

type probeClient struct {
	db       *sql.DB
	v        probeVariant
	name, me string
}

const probeTTL = int64(sqllockTTL / time.Microsecond)

func (c *probeClient) lock(ctx context.Context) (func(context.Context) error, error) {
	var token int64
	var err error
	switch {
	case c.v.exec:
		_, err = c.db.ExecContext(ctx, c.v.take, c.name, c.me, probeTTL)
	case c.v.noCancel:
		err = c.db.QueryRowContext(context.WithoutCancel(ctx), c.v.take, c.name, c.me, probeTTL).Scan(&token)
	default:
		err = c.db.QueryRowContext(ctx, c.v.take, c.name, c.me, probeTTL).Scan(&token)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: take: %w", c.v.name, err)
	}
	return func(ctx context.Context) error {
		_, err := c.db.ExecContext(ctx, c.v.release, c.name, c.me, probeTTL)
		return err
	}, nil
}

func (c *probeClient) close() error { return c.db.Close() }
