package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/compat/internal/grants"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/recipes/refusal"
)

// Dialect selects the SQL a Client speaks.
type Dialect int

// The dialects.
const (
	// PostgreSQL: version 12 or later (PL/pgSQL, clock_timestamp(),
	// pg_notify).
	PostgreSQL Dialect = iota + 1
	// MySQL: MySQL 8 or MariaDB 10.3 or later (InnoDB, GET_LOCK).
	MySQL
)

func (d Dialect) String() string {
	switch d {
	case PostgreSQL:
		return "PostgreSQL"
	case MySQL:
		return "MySQL"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// Named defaults and limits.
const (
	// DefaultTable is the lease table's default name.
	DefaultTable = "zkrecipes_locks"
	// DefaultTTL is how long a lock outlives a holder that stops renewing
	// it (a crash, a partition).
	DefaultTTL = 10 * time.Second
	// MinTTL is the shortest TTL: it leaves room for the margin
	// (recipes.DriftMargin) and for a round trip to the database in each
	// third of the trusted time.
	MinTTL = 100 * time.Millisecond
	// MaxTTL is the longest TTL: 30 days.
	MaxTTL = ttl.MaxTTL
	// MaxNameLen is the longest lock name, in bytes: the name column's
	// width. Longer names are refused, never truncated.
	MaxNameLen = 255
)

// Client is a lease table in one database, reached through db, a pool of
// the user's driver (github.com/jackc/pgx/v5/stdlib,
// github.com/go-sql-driver/mysql, ...). Every statement it sends is one
// autocommit statement with no session state, except MySQL's wake-up (see
// the package doc). Close it when done: it stops its Listener.
type Client struct {
	db      *sql.DB
	dialect Dialect
	table   string // as given, for messages
	sql     statements
	noCheck bool

	checked atomic.Bool // the table and the server's durability, at first use
	bg      ttl.Pending // clean-ups in the background, waited for by Close
	closed  atomic.Bool // by Close: no more acquisitions

	mu    sync.Mutex
	stmts map[string]*sql.Stmt // MySQL's, prepared at first use

	// PostgreSQL's grants: the channel of this client's waiters, and the
	// board they wait on. No listener: no channel, and waiters go by
	// their timers.
	listener Listener
	channel  string
	board    *grants.Board
	stop     context.CancelFunc
	done     sync.WaitGroup
}

// Listener receives PostgreSQL notifications for a Client's waiters, on a
// connection of its own: LISTEN is session state, which a pooler in
// transaction mode (PgBouncer) does not keep, so it connects to the
// server directly (or through a pooler in session mode).
// compat/sqllock/pgxlistener has one over pgx (a package of its own: only
// its importers link pgx).
type Listener interface {
	// Listen runs LISTEN channel (channel is an identifier of lowercase
	// letters, digits and underscores), calls ready once the server has
	// confirmed it, and then notify with the payload of each
	// notification on channel, in order, until ctx ends or the connection
	// fails; it returns why. The Client calls it again after a failure,
	// after a pause, until Close.
	Listen(ctx context.Context, channel string, ready func(), notify func(payload string)) error
}

// ClientOption configures NewClient.
type ClientOption func(*clientOptions)

type clientOptions struct {
	table    string
	listener Listener
	noCheck  bool
}

// WithTable names the lease table (default DefaultTable): an identifier
// (letters, digits and underscores, not starting with a digit, at most 48
// bytes), or schema.table with each part one. It is quoted in every
// statement.
func WithTable(name string) ClientOption { return func(o *clientOptions) { o.table = name } }

// WithListener gives a PostgreSQL Client the listener its waiters learn
// of grants from, at once. Without one, a waiter learns that the lock is
// free by its timer: within the holder's remaining TTL of a release.
func WithListener(l Listener) ClientOption { return func(o *clientOptions) { o.listener = l } }

// WithoutDurabilityCheck skips the check, at the Client's first use, that
// the server does not acknowledge a commit before it is safe from a crash
// of the server: PostgreSQL's synchronous_commit off, MySQL's
// innodb_flush_log_at_trx_commit 0. With either, a crash may forget the
// latest grant or renewal of a lock, and another client can then be
// granted it while its holder still trusts its lease (tokens stay
// ordered: they are floored by the server's clock).
func WithoutDurabilityCheck() ClientOption { return func(o *clientOptions) { o.noCheck = true } }

// identifier is what WithTable accepts, per part.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,47}$`)

// NewClient returns a Client of the lease table in db. No I/O is done: the
// first Acquire checks that the table exists (make it with CreateTable, or
// with the DDL that DDL returns) and the server's durability setting.
func NewClient(db *sql.DB, d Dialect, opts ...ClientOption) (*Client, error) {
	o := clientOptions{table: DefaultTable}
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("nil ClientOption")
		}
		opt(&o)
	}
	switch {
	case db == nil:
		return nil, invalid("nil *sql.DB")
	case d != PostgreSQL && d != MySQL:
		return nil, invalid("dialect %v: use PostgreSQL or MySQL", d)
	case d == MySQL && o.listener != nil:
		return nil, invalid("WithListener is for PostgreSQL (MySQL has no LISTEN: its waiters wait in GET_LOCK)")
	case o.listener != nil && ttl.IsNil(o.listener):
		return nil, invalid("nil Listener")
	}
	parts := strings.Split(o.table, ".")
	if len(parts) > 2 {
		return nil, invalid("table %q: a name or schema.name", o.table)
	}
	for _, p := range parts {
		if !identifier.MatchString(p) {
			return nil, invalid("table %q: %q is not an identifier (letters, digits and underscores, not starting with a digit, 1 to 48 bytes)", o.table, p)
		}
	}
	c := &Client{db: db, dialect: d, table: o.table, sql: newStatements(d, parts), noCheck: o.noCheck}
	if o.listener != nil {
		c.listener = o.listener
		c.channel = "zkrecipes_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		c.board = grants.NewBoard()
		ctx, stop := context.WithCancel(context.Background())
		c.stop = stop
		c.done.Add(1)
		go c.listen(ctx)
	}
	return c, nil
}

// invalid is an error that is recipes.ErrInvalidArgument.
func invalid(format string, args ...any) error {
	return fmt.Errorf("sqllock: %w: "+format, append([]any{recipes.ErrInvalidArgument}, args...)...)
}

// ErrClosed: the Client was closed (Close); its locks take the lock no
// more.
var ErrClosed = errors.New("sqllock: the Client is closed")

// Close waits for the Client's clean-ups in the background (a release
// retried after it failed, a waiter's queue entry or MySQL wait that
// could not be removed at once) for up to ttl.CloseWait (5s), then stops
// those left and says so in its error (the database lets what they leave
// go at its TTL); then it stops the Listener and waits for it, and closes
// its prepared statements. Waiters still waiting go on with their
// timers; later Acquires and TryAcquires fail with an error that is
// recipes.ErrNotAcquired and ErrClosed. The *sql.DB stays open: it is the
// caller's; close it after.
func (c *Client) Close() error {
	c.closed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), ttl.CloseWait)
	defer cancel()
	var errs []error
	if err := c.bg.Wait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("sqllock: close: %w", err))
	}
	c.mu.Lock()
	for q, st := range c.stmts {
		errs = append(errs, st.Close())
		delete(c.stmts, q)
	}
	c.mu.Unlock()
	if c.board != nil && c.board.Close() {
		c.stop()
		c.done.Wait()
	}
	return errors.Join(errs...)
}

// DDL is the statements that CreateTable runs, for users who manage their
// schema themselves (each is idempotent). On PostgreSQL the user that
// takes the locks needs SELECT, INSERT, UPDATE and DELETE on the table
// and EXECUTE on its function (the table's name and "_op"; PUBLIC has it
// by default).
func (c *Client) DDL() []string { return append([]string(nil), c.sql.ddl...) }

// CreateTable creates the lease table (and, on PostgreSQL, its function)
// if they do not exist; on PostgreSQL the function is replaced, which
// updates it to this version's. On PostgreSQL a lock's row is deleted
// when it is let go with nobody waiting (its next token is floored by
// the server's clock); on MySQL rows are never deleted by the lock: one
// per lock name, which keeps the token.
//
// Processes may call it at once: on PostgreSQL (whose concurrent DDL on
// one name fails with "tuple concurrently updated") it runs in one
// transaction under a transaction-level advisory lock on the table's
// name, which a transaction pooler keeps; MySQL's CREATE TABLE IF NOT
// EXISTS waits on the table's metadata lock.
func (c *Client) CreateTable(ctx context.Context) error {
	if c.dialect == MySQL {
		for _, s := range c.sql.ddl {
			if _, err := c.db.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("sqllock: create table %s: %w", c.table, err)
			}
		}
		return nil
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqllock: create table %s: %w", c.table, err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, s := range append([]string{`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`}, c.sql.ddl...) {
		var args []any
		if strings.HasPrefix(s, "SELECT pg_advisory_xact_lock") {
			args = []any{"zkrecipes.sqllock.ddl:" + c.sql.table}
		}
		if _, err := tx.ExecContext(ctx, s, args...); err != nil {
			return fmt.Errorf("sqllock: create table %s: %w", c.table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqllock: create table %s: %w", c.table, err)
	}
	return nil
}

// listen runs the listener until Close, again after each failure.
func (c *Client) listen(ctx context.Context) {
	defer c.done.Done()
	var backoff ttl.Backoff
	for ctx.Err() == nil {
		start := time.Now()
		_ = c.listener.Listen(ctx, c.channel, c.board.Confirm, func(p string) { c.board.Deliver(p) })
		if time.Since(start) > ttl.BackoffCap {
			backoff.Reset()
		}
		if !ttl.Sleep(ctx, ttl.Jitter(backoff.Next())) {
			return
		}
	}
}

// cancelTimeout bounds the clean-up after a waiter gives up.
const cancelTimeout = 5 * time.Second

// Lock is a lock on one name in a Client's table.
type Lock struct {
	c     *Client
	name  string
	trace *locktrace.Trace
	ttl   time.Duration
	terms ttl.Terms // of its leases
	mysql *companion

	// busy is a PostgreSQL Lock's hint that its last statement found
	// others in its row (a holder or waiters): its acquisitions and
	// releases then call the function at once, rather than first send
	// the plain INSERT or DELETE that would find the row again (a round
	// trip more on every contended acquisition and release). A release
	// by the function that deletes the row clears it. Only the cost
	// depends on it: the INSERT takes only a lock with no row (so no
	// queue to jump), the DELETE lets go only a row with no waiter.
	busy atomic.Bool
}

var _ recipes.Locker = (*Lock)(nil)

// Option configures New.
type Option func(*options)

type options struct {
	ttl   time.Duration
	trace *locktrace.Trace
}

// WithTTL sets how long the lock outlives a holder that stops renewing it
// (default DefaultTTL, from MinTTL to MaxTTL, whole microseconds). The
// holder renews it every third of its trusted time (the TTL less
// recipes.DriftMargin(ttl)). Processes that share a lock may use different
// TTLs: a lock handed on to a waiter is granted for the waiter's own.
func WithTTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// New returns the lock named name: 1 to MaxNameLen bytes of UTF-8, no NUL.
// No I/O is done.
func New(c *Client, name string, opts ...Option) (*Lock, error) {
	switch {
	case c == nil:
		return nil, invalid("nil Client (make one with NewClient)")
	case name == "":
		return nil, invalid("empty lock name")
	case len(name) > MaxNameLen:
		return nil, invalid("lock name of %d bytes: at most %d (the name column's width; names are never truncated)", len(name), MaxNameLen)
	case !utf8.ValidString(name) || strings.ContainsRune(name, 0):
		return nil, invalid("lock name %q: must be UTF-8 with no NUL", name)
	}
	o := options{ttl: DefaultTTL}
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("nil Option")
		}
		opt(&o)
	}
	switch {
	case o.ttl < MinTTL || o.ttl > MaxTTL:
		return nil, invalid("TTL %v: must be from %v to %v", o.ttl, MinTTL, MaxTTL)
	case o.ttl%time.Microsecond != 0:
		return nil, invalid("TTL %v: the database counts whole microseconds", o.ttl)
	}
	l := &Lock{c: c, name: name, ttl: o.ttl, trace: o.trace}
	l.terms = ttl.NewTerms(o.ttl, o.ttl-recipes.DriftMargin(o.ttl), l.String())
	if c.dialect == MySQL {
		l.mysql = newCompanion(c.sql.table, name)
	}
	return l, nil
}

// Name is the lock's name: its row's key.
func (l *Lock) Name() string { return l.name }

// String names the lock in messages, as its errors do: "sqllock orders".
func (l *Lock) String() string { return "sqllock " + l.name }

// Acquire waits until the lock is held, ctx ends (an error that is
// recipes.ErrNotAcquired and ctx's error; what the waiter left in the
// table is taken out before it returns, in the background only when the
// database does not answer in time) or an error that trying again
// cannot mend (the table missing, a durability setting, a closed
// *sql.DB, a password or a TLS certificate refused: an error that is
// recipes.ErrNotAcquired and says why). Errors
// of the database (unreachable, restarting) are retried until ctx ends.
// With a context from a live lease of this Lock it re-enters at once.
//
// On PostgreSQL waiters are served in the order they first queued: a
// release hands the lock to the first waiter still alive, and tells it
// through the Client's Listener; a timer at the holder's remaining TTL
// covers a lost notification and a crashed holder (for the first live
// waiter; the one behind it wakes every two TTLs to keep its place in
// the queue, those further back every five, and each watches the
// holder's expiry from the first refresh that finds it first). On MySQL
// waiters wait in GET_LOCK: the first on a companion name that the
// holder holds, the others on the first's (see the package doc).
//
// The lease's context is cancelled, with a cause that is
// recipes.ErrLockLost, recipes.DriftMargin(ttl) before the TTL counted
// from the send time of the last confirmed statement (acquire or renewal)
// would let the lock go, or when a renewal finds the row someone else's:
// before anyone else can be granted the lock. It is NOT safe to assume
// the lock is held until Release: do the work with the lease's context,
// and fence writes with its token.
func (l *Lock) Acquire(ctx context.Context) (recipes.Lease, error) { return l.acquire(ctx, true) }

// TryAcquire takes the lock if it is free now and no one waits for it,
// and otherwise returns at once an error that is recipes.ErrLocked (or
// recipes.ErrNotAcquired with the error that kept it from asking).
func (l *Lock) TryAcquire(ctx context.Context) (recipes.Lease, error) {
	return l.acquire(ctx, false)
}

func (l *Lock) acquire(ctx context.Context, wait bool) (recipes.Lease, error) {
	backend := "postgres"
	if l.c.dialect == MySQL {
		backend = "mysql"
	}
	return ttl.Acquire(ctx, l, l.trace, locktrace.LockID{Backend: backend, Kind: "lock", Name: l.name}, !wait,
		func(a *hold.Acquisition) (recipes.Lease, error) {
			if l.c.closed.Load() { // after re-entry: a held lease re-enters still
				return nil, fmt.Errorf("%w: %s: %w", recipes.ErrNotAcquired, l, ErrClosed)
			}
			if l.c.dialect == MySQL {
				return l.acquireMySQL(ctx, wait, a)
			}
			return l.acquirePostgres(ctx, wait, a)
		})
}

// ErrDurability is the error of a server that may acknowledge a commit
// before it is safe from a crash (see WithoutDurabilityCheck).
var ErrDurability = errors.New("the server may forget acknowledged commits")

// check verifies, once per Client, that its table exists and that the
// server keeps what it acknowledged (unless WithoutDurabilityCheck).
// Errors that trying again cannot mend are ttl.ErrPermanent.
func (c *Client) check(ctx context.Context) error {
	if c.checked.Load() {
		return nil
	}
	var durability string
	var exists, current bool
	if err := c.db.QueryRowContext(ctx, c.sql.check, c.sql.checkArgs...).Scan(&durability, &exists, &current); err != nil {
		return permanent(fmt.Errorf("check table %s: %w", c.table, err))
	}
	switch {
	case !exists:
		return ttl.Permanent(fmt.Errorf("table %s (or its function) does not exist in this database: run Client.CreateTable, or the statements of Client.DDL", c.table))
	case !current:
		// Its function would grant the lock to a waiter for the
		// releaser's TTL, not the waiter's.
		return ttl.Permanent(fmt.Errorf("table %s was made by an earlier version of sqllock (it has no column waiter_ttl): run Client.CreateTable, or the statements of Client.DDL, to update it and its function", c.table))
	case !c.noCheck && c.dialect == PostgreSQL && durability == "off":
		return ttl.Permanent(fmt.Errorf("%w: synchronous_commit is off, so a crash of the server may forget a lock's latest grant or renewal and grant it to another client while its holder trusts its lease: set synchronous_commit to on (or local), or pass sqllock.WithoutDurabilityCheck() to accept the risk", ErrDurability))
	case !c.noCheck && c.dialect == MySQL && durability == "0":
		return ttl.Permanent(fmt.Errorf("%w: innodb_flush_log_at_trx_commit is 0, so a crash of the server may forget a lock's latest grant or renewal and grant it to another client while its holder trusts its lease: set it to 1 (or 2, which a crash of the server alone does not defeat), or pass sqllock.WithoutDurabilityCheck() to accept the risk", ErrDurability))
	}
	c.checked.Store(true)
	return nil
}

// permanent marks the errors that trying again cannot mend: a closed
// *sql.DB or connection of ours, database/sql's own refusals (an
// argument it cannot convert), PostgreSQL's errors of SQLSTATE class 42
// (syntax error or access rule violation: a table or function missing, a
// permission refused), and MySQL's of the same kinds, by number
// (mysqlPermanent). A new connection refused is marked ttl.Refused: its
// credentials (SQLSTATE class 28: a wrong password, a pg_hba.conf rule;
// MySQL's access denied) or a TLS certificate refused either way. An
// acquisition ends at it too, but a renewal tries again until the lease's
// deadline: a password or a certificate rotated on the server refuses the
// pool's new connections while those it already holds still work.
// Refusals (the module's one rule, package refusal) are marked so that
// errors.Is(err, recipes.ErrRefused) holds. Others (the server
// unreachable, restarting, a deadlock, a limit, a timeout) are transient.
func permanent(err error) error {
	if err == nil || errors.Is(err, sql.ErrNoRows) {
		return err
	}
	switch r, _ := refusal.Of(err); r {
	case refusal.NotRefused:
	case refusal.Permission:
		return ttl.Permanent(refusal.Mark(err))
	default:
		return ttl.Refused(refusal.Mark(err))
	}
	msg := err.Error()
	if strings.Contains(msg, "sql: database is closed") || errors.Is(err, sql.ErrConnDone) ||
		strings.Contains(msg, "sql: expected") || strings.Contains(msg, "sql: converting") {
		return ttl.Permanent(err)
	}
	var st interface{ SQLState() string } // pgx, lib/pq
	if errors.As(err, &st) {
		if strings.HasPrefix(st.SQLState(), "42") {
			return ttl.Permanent(err)
		}
		return err
	}
	if m := mysqlError.FindStringSubmatch(msg); m != nil && mysqlPermanent[m[1]] {
		return ttl.Permanent(err)
	}
	return err
}

// mysqlError is how go-sql-driver/mysql writes a server's error: "Error
// 1146 (42S02): Table ...", anywhere in a wrapped message.
var mysqlError = regexp.MustCompile(`Error (\d+) \([0-9A-Z]{5}\)`)

// mysqlPermanent are MySQL's errors other than refusals that trying again
// cannot mend, by number: a table or column missing, a syntax error. Not
// all of SQLSTATE class 42: it also holds limits that pass (1203 too many
// connections for the user, 1226 a user's resource limit, 1461
// max_prepared_stmt_count).
var mysqlPermanent = map[string]bool{
	"1054": true, // ER_BAD_FIELD_ERROR
	"1064": true, // ER_PARSE_ERROR
	"1146": true, // ER_NO_SUCH_TABLE
}

// errDB wraps a database error of Acquire, keeping ctx's errors as they
// are.
func errDB(what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("sqllock: %s: %w", what, err)
}

// WithTrace reports the lock's acquisitions, leases and renewals to t (see
// locktrace.Trace); a trace in an Acquire's context is called too.
func WithTrace(t *locktrace.Trace) Option { return func(o *options) { o.trace = t } }
