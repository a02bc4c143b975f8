package sqlbench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/golang-migrate/migrate/v4/database"
	migratepg "github.com/golang-migrate/migrate/v4/database/postgres"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/compat/sqllock/pgxlistener"
)

// The implementations, each as a client: one contender with connections
// of its own (its own *sql.DB), as one process would have.

// client is one contender.
type client interface {
	// lock waits until it holds the lock, and returns how to release it.
	lock(ctx context.Context) (release func(context.Context) error, err error)
	close() error
}

// impl makes the clients of one implementation on one kind of server.
type impl struct {
	name string
	kind string // Postgres or MariaDB
	// open makes a client of the lock named name on the server at dsn
	// (the harness's DSN, or the same through a proxy), the statements it
	// sends counted in sent (open it with OpenDB).
	open func(ctx context.Context, dsn, name string, sent *atomic.Int64) (client, error)
}

// allImpls are the peers, on the server each runs on.
var allImpls = []impl{advisoryImpl, migrateImpl, seedImpl(Postgres), getLockImpl, seedImpl(MariaDB)}

// sqllockImpls is the slot for this repository's compat/sqllock (the
// lease-table lock over database/sql), one entry per kind of server
// (Postgres, MariaDB), added by its author. Its open should make the
// *sql.DB with OpenDB(kind, dsn, sent), so that its statements are
// counted as the peers' are. Every benchmark here runs these too.
//
// sqllockTTL is the TTL of this lock in every benchmark: short, so that
// the takeover (one TTL after the holder's last renewal) fits the cap.
const sqllockTTL = 2 * time.Second

var sqllockImpls = []impl{sqllockImpl(Postgres), sqllockImpl(MariaDB)}

// sqllockImpl: compat/sqllock, a client per contender with a pool of its
// own (and, on PostgreSQL, its listener on the same server).
func sqllockImpl(kind string) impl {
	return impl{name: "sqllock-" + kind, kind: kind,
		open: func(ctx context.Context, dsn, name string, sent *atomic.Int64) (client, error) {
			db, err := OpenDB(kind, dsn, sent)
			if err != nil {
				return nil, err
			}
			return sqllockOn(ctx, db, kind, dsn, name, sqllockTTL)
		}}
}

// sqllockOn is a sqllock client of the lock name on db (closed with it),
// with, on PostgreSQL, its listener on dsn; the table is made.
func sqllockOn(ctx context.Context, db *sql.DB, kind, dsn, name string, ttl time.Duration) (*sqllockClient, error) {
	var opts []sqllock.ClientOption
	dialect := sqllock.MySQL
	if kind == Postgres {
		dialect = sqllock.PostgreSQL
		l, err := pgxlistener.Parse(dsn)
		if err != nil {
			return nil, errors.Join(err, db.Close())
		}
		opts = append(opts, sqllock.WithListener(l))
	}
	c, err := sqllock.NewClient(db, dialect, opts...)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	if err := c.CreateTable(ctx); err != nil {
		return nil, errors.Join(err, c.Close(), db.Close())
	}
	l, err := sqllock.New(c, name, sqllock.WithTTL(ttl))
	if err != nil {
		return nil, errors.Join(err, c.Close(), db.Close())
	}
	return &sqllockClient{db: db, c: c, l: l}, nil
}

type sqllockClient struct {
	db *sql.DB
	c  *sqllock.Client
	l  *sqllock.Lock

	mu   sync.Mutex
	told time.Time // when the last lease's context ended
}

func (c *sqllockClient) lock(ctx context.Context) (func(context.Context) error, error) {
	lease, err := c.l.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(lease.Context(), func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.told = time.Now()
	})
	return lease.Release, nil
}

// toldAt is when the last lease's context ended (zero while it lives).
func (c *sqllockClient) toldAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.told
}

func (c *sqllockClient) close() error { return errors.Join(c.c.Close(), c.db.Close()) }

// implsFor is the implementations that run on kind: the peers, then
// sqllockImpls; with SQLBENCH_ONLY set, those whose name starts with it.
func implsFor(kind string) []impl {
	var out []impl
	only := os.Getenv("SQLBENCH_ONLY") // a name prefix, to run some only
	for _, im := range append(append([]impl(nil), allImpls...), sqllockImpls...) {
		if im.kind == kind && strings.HasPrefix(im.name, only) {
			out = append(out, im)
		}
	}
	return out
}

// advisoryKey is the advisory lock key of name: 64 bits of its FNV-1a.
func advisoryKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// advisoryImpl: PostgreSQL's session advisory lock on a pinned
// connection. pg_advisory_lock waits in the server (no polling);
// pg_advisory_unlock releases, then the connection goes back to the pool.
var advisoryImpl = impl{name: "pg-advisory", kind: Postgres,
	open: func(_ context.Context, dsn, name string, sent *atomic.Int64) (client, error) {
		db, err := OpenDB(Postgres, dsn, sent)
		if err != nil {
			return nil, err
		}
		return &advisoryClient{db: db, key: advisoryKey(name)}, nil
	}}

type advisoryClient struct {
	db  *sql.DB
	key int64
}

func (c *advisoryClient) lock(ctx context.Context) (func(context.Context) error, error) {
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", c.key); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return func(ctx context.Context) error {
		var ok bool
		err := conn.QueryRowContext(ctx, "SELECT pg_advisory_unlock($1)", c.key).Scan(&ok)
		if err == nil && !ok {
			err = errors.New("pg_advisory_unlock: the lock was not held")
		}
		return errors.Join(err, conn.Close())
	}, nil
}

func (c *advisoryClient) close() error { return c.db.Close() }

// getLockImpl: MySQL/MariaDB's GET_LOCK on a pinned connection, with
// getLockTimeout (asked again while it times out), and RELEASE_LOCK.
var getLockImpl = impl{name: "mariadb-get_lock", kind: MariaDB,
	open: func(_ context.Context, dsn, name string, sent *atomic.Int64) (client, error) {
		db, err := OpenDB(MariaDB, dsn, sent)
		if err != nil {
			return nil, err
		}
		return &getLockClient{db: db, name: name}, nil
	}}

// getLockTimeout is the timeout of one GET_LOCK, in seconds.
const getLockTimeout = 10

type getLockClient struct {
	db   *sql.DB
	name string
}

func (c *getLockClient) lock(ctx context.Context) (func(context.Context) error, error) {
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	for {
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", c.name, getLockTimeout).Scan(&got); err != nil {
			_ = conn.Close()
			return nil, err
		}
		if !got.Valid {
			_ = conn.Close()
			return nil, errors.New("GET_LOCK returned NULL")
		}
		if got.Int64 == 1 {
			break
		}
		if err := ctx.Err(); err != nil { // timed out: ask again
			_ = conn.Close()
			return nil, err
		}
	}
	return func(ctx context.Context) error {
		var released sql.NullInt64
		err := conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", c.name).Scan(&released)
		if err == nil && released.Int64 != 1 {
			err = fmt.Errorf("RELEASE_LOCK returned %v: the lock was not held", released)
		}
		return errors.Join(err, conn.Close())
	}, nil
}

func (c *getLockClient) close() error { return c.db.Close() }

// migrateImpl: golang-migrate's PostgreSQL driver lock (Lock/Unlock of
// database/postgres): pg_advisory_lock on the connection WithInstance
// pins, its key made from the database, schema and migrations table. Each
// client has its own driver instance; the lock name selects the
// migrations table (so that the benchmarks' locks differ). Lock takes no
// context: it waits until the server grants it.
var migrateImpl = impl{name: "golang-migrate", kind: Postgres,
	open: func(_ context.Context, dsn, name string, sent *atomic.Int64) (client, error) {
		db, err := OpenDB(Postgres, dsn, sent)
		if err != nil {
			return nil, err
		}
		table := "migrate_" + strings.NewReplacer("-", "_", ".", "_", "=", "_").Replace(name)
		drv, err := migratepg.WithInstance(db, &migratepg.Config{MigrationsTable: table})
		if err != nil {
			_ = db.Close()
			return nil, err
		}
		return &migrateClient{drv: drv}, nil
	}}

type migrateClient struct{ drv database.Driver }

func (c *migrateClient) lock(context.Context) (func(context.Context) error, error) {
	if err := c.drv.Lock(); err != nil {
		return nil, err
	}
	return func(context.Context) error { return c.drv.Unlock() }, nil
}

func (c *migrateClient) close() error { return c.drv.Close() }

// The seed table recipe, as users write it: a row per lock, taken by
// inserting it (the primary key refuses a second), given back by deleting
// it by name. The row has no expiry: a holder that goes away keeps it.

// seedDDL is the seed recipe's table, the same on both servers.
const seedDDL = `CREATE TABLE IF NOT EXISTS seed_lock (
	name varchar(255) PRIMARY KEY,
	owner varchar(64),
	update_time timestamp
)`

// seedRetry is the sleep before another INSERT when the row is taken.
const seedRetry = time.Millisecond

// seedDeadlocks counts the MySQL deadlock errors (1213) the seed recipe
// retried on MariaDB.
var seedDeadlocks atomic.Int64

func seedImpl(kind string) impl {
	insert, del := "INSERT INTO seed_lock (name, owner, update_time) VALUES ($1, $2, now())",
		"DELETE FROM seed_lock WHERE name = $1"
	if kind == MariaDB {
		insert, del = "INSERT INTO seed_lock (name, owner, update_time) VALUES (?, ?, NOW())",
			"DELETE FROM seed_lock WHERE name = ?"
	}
	return impl{name: "seed-table-" + kind, kind: kind,
		open: func(_ context.Context, dsn, name string, sent *atomic.Int64) (client, error) {
			db, err := OpenDB(kind, dsn, sent)
			if err != nil {
				return nil, err
			}
			return &seedClient{db: db, kind: kind, name: name, owner: rand.Text(), insert: insert, del: del}, nil
		}}
}

type seedClient struct {
	db                *sql.DB
	kind, name, owner string
	insert, del       string
}

// taken reports whether err is the row being there already (or, on
// MariaDB, a deadlock between the inserts and deletes): try again.
func (c *seedClient) taken(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505" // unique_violation
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		if me.Number == 1213 { // ER_LOCK_DEADLOCK
			seedDeadlocks.Add(1)
			return true
		}
		return me.Number == 1062 // ER_DUP_ENTRY
	}
	return false
}

func (c *seedClient) lock(ctx context.Context) (func(context.Context) error, error) {
	for {
		_, err := c.db.ExecContext(ctx, c.insert, c.name, c.owner)
		if err == nil {
			break
		}
		if !c.taken(err) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(seedRetry):
		}
	}
	return func(ctx context.Context) error {
		_, err := c.db.ExecContext(ctx, c.del, c.name)
		return err
	}, nil
}

func (c *seedClient) close() error { return c.db.Close() }
