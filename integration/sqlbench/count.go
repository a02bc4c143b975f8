package sqlbench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// The kinds of server, as the benchmarks' sub-benchmarks name them.
const (
	Postgres = "postgres"
	MariaDB  = "mariadb"
)

// OpenDB opens a *sql.DB of kind (Postgres: pgx's database/sql driver;
// MariaDB: go-sql-driver/mysql) on dsn, both with their defaults, every
// statement it sends counted in sent (when not nil): each query or exec,
// on a connection or on a prepared statement. Preparing and closing a
// statement are round trips but not statements and are not counted, so
// go-sql-driver/mysql's default of preparing every statement that has
// arguments (interpolateParams=false: prepare, execute, close) counts
// one, as pgx's cached prepared statements do.
func OpenDB(kind, dsn string, sent *atomic.Int64) (*sql.DB, error) {
	var c driver.Connector
	switch kind {
	case Postgres:
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, err
		}
		c = stdlib.GetConnector(*cfg)
	case MariaDB:
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return nil, err
		}
		c, err = mysql.NewConnector(cfg)
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("sqlbench: unknown kind %q", kind)
	}
	if sent == nil {
		sent = new(atomic.Int64)
	}
	return sql.OpenDB(&countingConnector{inner: c, sent: sent}), nil
}

// countingConnector wraps a driver's connector so that its connections
// count the statements they send. The wrappers forward every optional
// interface both drivers implement, so database/sql takes the same paths
// with and without them.
type countingConnector struct {
	inner driver.Connector
	sent  *atomic.Int64
}

func (c *countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{inner: conn, sent: c.sent}, nil
}

func (c *countingConnector) Driver() driver.Driver { return c.inner.Driver() }

type countingConn struct {
	inner driver.Conn
	sent  *atomic.Int64
}

var (
	_ driver.Conn               = (*countingConn)(nil)
	_ driver.ConnPrepareContext = (*countingConn)(nil)
	_ driver.ConnBeginTx        = (*countingConn)(nil)
	_ driver.ExecerContext      = (*countingConn)(nil)
	_ driver.QueryerContext     = (*countingConn)(nil)
	_ driver.Pinger             = (*countingConn)(nil)
	_ driver.NamedValueChecker  = (*countingConn)(nil)
	_ driver.SessionResetter    = (*countingConn)(nil)
	_ driver.Validator          = (*countingConn)(nil)
)

// count counts a statement that was sent: not when the driver declined
// it (driver.ErrSkip: database/sql then prepares it and runs the
// statement, which counts).
func (c *countingConn) count(err error) {
	if !errors.Is(err, driver.ErrSkip) {
		c.sent.Add(1)
	}
}

func (c *countingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var (
		s   driver.Stmt
		err error
	)
	if p, ok := c.inner.(driver.ConnPrepareContext); ok {
		s, err = p.PrepareContext(ctx, query)
	} else {
		s, err = c.inner.Prepare(query)
	}
	if err != nil {
		return nil, err
	}
	return &countingStmt{inner: s, conn: c, sent: c.sent}, nil
}

func (c *countingConn) Close() error { return c.inner.Close() }

// Begin is driver.Conn's; database/sql calls BeginTx.
func (c *countingConn) Begin() (driver.Tx, error) {
	//lint:ignore SA1019 driver.Conn requires Begin; this forwards it.
	return c.inner.Begin()
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.inner.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	return nil, errors.New("sqlbench: the driver has no BeginTx")
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.inner.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := e.ExecContext(ctx, query, args)
	c.count(err)
	return r, err
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.inner.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := q.QueryContext(ctx, query, args)
	c.count(err)
	return r, err
}

func (c *countingConn) Ping(ctx context.Context) error {
	if p, ok := c.inner.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	if n, ok := c.inner.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.inner.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *countingConn) IsValid() bool {
	if v, ok := c.inner.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// countingStmt counts the executions of a prepared statement.
type countingStmt struct {
	inner driver.Stmt
	conn  *countingConn
	sent  *atomic.Int64
}

var (
	_ driver.StmtExecContext   = (*countingStmt)(nil)
	_ driver.StmtQueryContext  = (*countingStmt)(nil)
	_ driver.NamedValueChecker = (*countingStmt)(nil)
)

func (s *countingStmt) Close() error  { return s.inner.Close() }
func (s *countingStmt) NumInput() int { return s.inner.NumInput() }

// Exec is driver.Stmt's; database/sql calls ExecContext.
func (s *countingStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.sent.Add(1)
	//lint:ignore SA1019 driver.Stmt requires Exec; this forwards it.
	return s.inner.Exec(args)
}

// Query is driver.Stmt's; database/sql calls QueryContext.
func (s *countingStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.sent.Add(1)
	//lint:ignore SA1019 driver.Stmt requires Query; this forwards it.
	return s.inner.Query(args)
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	e, ok := s.inner.(driver.StmtExecContext)
	if !ok {
		return nil, errors.New("sqlbench: the driver's statement has no ExecContext")
	}
	s.sent.Add(1)
	return e.ExecContext(ctx, args)
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := s.inner.(driver.StmtQueryContext)
	if !ok {
		return nil, errors.New("sqlbench: the driver's statement has no QueryContext")
	}
	s.sent.Add(1)
	return q.QueryContext(ctx, args)
}

// CheckNamedValue checks as database/sql would without the wrapper: the
// statement's checker, else the connection's, then the statement's column
// converter (go-sql-driver/mysql's statements have one), and then
// database/sql's default (driver.ErrSkip).
func (s *countingStmt) CheckNamedValue(nv *driver.NamedValue) error {
	var err error
	if n, ok := s.inner.(driver.NamedValueChecker); ok {
		err = n.CheckNamedValue(nv)
	} else {
		err = s.conn.CheckNamedValue(nv)
	}
	if !errors.Is(err, driver.ErrSkip) {
		return err
	}
	//lint:ignore SA1019 go-sql-driver/mysql's statements convert this way.
	if cc, ok := s.inner.(driver.ColumnConverter); ok {
		v, err := cc.ColumnConverter(nv.Ordinal - 1).ConvertValue(nv.Value)
		if err != nil {
			return err
		}
		nv.Value = v
		return nil
	}
	return driver.ErrSkip
}
