package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql" // and the database/sql driver "mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/compat/sqllock/pgxlistener"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// The database/sql drivers of the SQL backends.
const (
	driverPostgres = "pgx"   // github.com/jackc/pgx/v5/stdlib
	driverMySQL    = "mysql" // github.com/go-sql-driver/mysql
)

// validateSQL checks the flags of --backend postgres and mysql: the DSN
// is given, in one place (--dsn, $ZKLOCK_DSN or --dsn-file; a password in
// --dsn is refused), and parses, as the LISTEN DSN does; for mysql, the
// --tls files load, and the DSN's tls setting does not say otherwise.
// Nothing is connected to.
func (b *backendOptions) validateSQL(set map[string]bool) error {
	dsn, from, err := mainDSN.resolve(b.dsn, b.dsnFile, set)
	if err != nil {
		return err
	}
	if dsn == "" {
		return fmt.Errorf("--backend %s needs a DSN: --dsn DSN (without a password), $%s or --dsn-file FILE", b.name, dsnEnv)
	}
	b.dsn = dsn
	listen, listenFrom := "", ""
	if b.name == backendPostgres {
		if listen, listenFrom, err = listenDSN.resolve(b.listenDSN, b.listenDSNFile, set); err != nil {
			return err
		}
		if listenFrom != "" && listen == "" {
			return errors.New("empty --listen-dsn (leave it out to LISTEN over --dsn)")
		}
	}
	b.listenDSN = listen
	invalid := func(flag string, err error) error {
		// pgx's messages show the DSN, its password masked; the
		// reporter's masking is for messages printed after this one.
		return fmt.Errorf("invalid %s: %s", flag, redact(err.Error(), b.secrets()))
	}
	if b.name == backendMySQL {
		cfg, err := mysql.ParseDSN(b.dsn)
		if err != nil {
			return invalid(from+" "+maskDSN(b.dsn), err)
		}
		return b.validateMySQLTLS(from, cfg)
	}
	if _, err := pgx.ParseConfig(b.dsn); err != nil {
		return invalid(from, err)
	}
	if b.listenDSN != "" {
		if _, err := pgx.ParseConfig(b.listenDSN); err != nil {
			return invalid(listenFrom, err)
		}
	}
	return nil
}

// validateMySQLTLS loads the --tls files for --backend mysql; they make
// every connection TLS, the server's certificate checked (against
// --tls-ca, else the system's CAs) for the host of the DSN, so a DSN
// whose tls setting says otherwise (false, skip-verify, preferred, a
// name) is a usage error.
func (b *backendOptions) validateMySQLTLS(from string, cfg *mysql.Config) error {
	if b.tls == nil || !b.tls.given() {
		return nil
	}
	if cfg.TLSConfig != "" && cfg.TLSConfig != "true" {
		return fmt.Errorf("%s has tls=%s: --tls-ca, --tls-cert and --tls-key make the connection TLS with the server's certificate checked; leave tls out of the DSN (or give tls=true)",
			from, cfg.TLSConfig)
	}
	return b.tls.validate()
}

// openDB opens the pool of the SQL backend: for mysql with the --tls
// flags, the TLS configuration they say (go-sql-driver/mysql checks the
// certificate for the DSN's host).
func (b *backendOptions) openDB(driver string) (*sql.DB, error) {
	if b.name != backendMySQL || b.tls == nil || !b.tls.given() {
		return sql.Open(driver, b.dsn)
	}
	cfg, err := mysql.ParseDSN(b.dsn)
	if err != nil {
		return nil, err
	}
	cfg.TLS = b.tls.config()
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector), nil
}

// listenOr is the DSN of PostgreSQL's LISTEN connection.
func (b *backendOptions) listenOr() string {
	if b.listenDSN != "" {
		return b.listenDSN
	}
	return b.dsn
}

// sqlServer names the SQL server in messages, its DSN's password masked:
// "PostgreSQL at postgres://user:xxxxx@host/db".
func (b *backendOptions) sqlServer() string {
	if b.name == backendMySQL {
		return "MySQL at " + maskDSN(b.dsn)
	}
	return "PostgreSQL at " + maskDSN(b.dsn)
}

// secrets are the passwords of the DSNs given, as written and as the
// driver reads them (URL-decoded, unquoted), and the Redis and sentinel
// passwords, which no message may show: the reporter masks them wherever
// they appear.
func (b *backendOptions) secrets() []string {
	out := []string{b.redisPassword, b.sentinelPassword}
	for _, dsn := range []string{b.dsn, b.listenDSN} {
		if dsn == "" {
			continue
		}
		out = append(out, dsnSecrets(dsn)...)
		switch b.name {
		case backendMySQL:
			if cfg, err := mysql.ParseDSN(dsn); err == nil {
				out = append(out, cfg.Passwd)
			}
		case backendPostgres:
			if cfg, err := pgx.ParseConfig(dsn); err == nil {
				out = append(out, cfg.Password)
			}
		}
	}
	return longestFirst(out)
}

// openSQL opens the lock named name in the lease table of --dsn, after
// checking that the server answers and creating the table if it is
// missing (bounded by ctx). It returns the lock and what closes the
// client and the pool.
func (b *backendOptions) openSQL(ctx context.Context, name string, rep *reporter) (recipes.Locker, func(), error) {
	driver, dialect := driverPostgres, sqllock.PostgreSQL
	if b.name == backendMySQL {
		driver, dialect = driverMySQL, sqllock.MySQL
	}
	db, err := b.openDB(driver)
	if err != nil { // not expected: validate parsed it
		return nil, nil, fmt.Errorf("%w: --dsn: %v", recipes.ErrInvalidArgument, err)
	}
	opts := []sqllock.ClientOption{sqllock.WithTable(b.table)}
	if b.noDurable {
		opts = append(opts, sqllock.WithoutDurabilityCheck())
	}
	if dialect == sqllock.PostgreSQL {
		l, err := pgxlistener.Parse(b.listenOr())
		if err != nil { // not expected: validate parsed it
			_ = db.Close()
			return nil, nil, fmt.Errorf("%w: --listen-dsn: %v", recipes.ErrInvalidArgument, err)
		}
		opts = append(opts, sqllock.WithListener(listenReport{l: l, rep: rep}))
	}
	c, err := sqllock.NewClient(db, dialect, opts...)
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	closeAll := func() {
		// Waits for the clean-ups of the lock (a waiter's entry, a
		// release retried), stops the listener; then the pool.
		if err := c.Close(); err != nil {
			rep.errorf("%v", err)
		}
		_ = db.Close()
	}
	l, err := sqllock.New(c, name, sqllock.WithTTL(b.ttlOr(sqllock.DefaultTTL)))
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("cannot connect to %s: %w", b.sqlServer(), err)
	}
	lock := sqlLock{Lock: l}
	switch err := c.CreateTable(ctx); {
	case err == nil:
	case deniedDDL(err):
		// Made by someone else, perhaps (a DBA, with zklock's user granted
		// DML only): the first acquire checks that it is there.
		rep.infof("cannot create the lock table %s on %s (trying it as it is): %v", b.table, b.sqlServer(), err)
		lock.createErr = err
	default:
		closeAll()
		return nil, nil, fmt.Errorf("cannot create the lock table %s on %s: %w", b.table, b.sqlServer(), err)
	}
	return lock, closeAll, nil
}

// deniedDDL tells the error of a user who may not create the table (or,
// on PostgreSQL, replace its function): PostgreSQL's insufficient_privilege,
// MySQL's access denied.
func deniedDDL(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "42501"
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1044, 1142, 1227: // ER_DBACCESS_DENIED_ERROR, ER_TABLEACCESS_DENIED_ERROR, ER_SPECIFIC_ACCESS_DENIED_ERROR
			return true
		}
	}
	return false
}

// sqlLock is the lock of the SQL backends: an error of its acquire says
// why zklock could not create the table, when it could not (the table may
// be missing).
type sqlLock struct {
	*sqllock.Lock
	createErr error
}

func (l sqlLock) Acquire(ctx context.Context) (recipes.Lease, error) {
	lease, err := l.Lock.Acquire(ctx)
	return lease, l.explain(err)
}

func (l sqlLock) TryAcquire(ctx context.Context) (recipes.Lease, error) {
	lease, err := l.Lock.TryAcquire(ctx)
	return lease, l.explain(err)
}

func (l sqlLock) explain(err error) error {
	if errors.Is(err, sqllock.ErrDurability) {
		return fmt.Errorf("%w (zklock: --without-durability-check)", err)
	}
	if err == nil || l.createErr == nil || errors.Is(err, recipes.ErrLocked) {
		return err
	}
	return fmt.Errorf("%w (zklock could not create the table: %v)", err, l.createErr)
}

// listenReport is the PostgreSQL listener, its failures reported with -v
// only (the client connects again; meanwhile waiters go by their timers).
type listenReport struct {
	l   sqllock.Listener
	rep *reporter
}

func (w listenReport) Listen(ctx context.Context, channel string, ready func(), notify func(string)) error {
	err := w.l.Listen(ctx, channel, ready, notify)
	if err != nil && ctx.Err() == nil {
		w.rep.infof("postgres: LISTEN connection: %v (waiters learn of releases by their timers until it is back)", err)
	}
	return err
}
