package sqlbench

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Benchmarks of SQL locks side by side on the same local server in one
// run: PostgreSQL's advisory lock, golang-migrate's lock, MariaDB's
// GET_LOCK, the seed table recipe on both, and compat/sqllock's slot
// (sqllockImpls). doc.go has the commands.

// kinds are the servers every benchmark runs on, a sub-benchmark each.
var kinds = []string{Postgres, MariaDB}

// benchLimit bounds each benchmark's work: every context is under it.
const benchLimit = 20 * time.Minute

// bounded is a context that ends after d or at tb's cleanup.
func bounded(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// server is one local database server of a benchmark.
type server struct {
	kind  string
	addr  string
	dsn   string
	admin *sql.DB // one connection, for reading counters; not counted
}

// startServer starts a local server of kind for tb (ended by
// harness.Unavailable when there is none) with the seed recipe's table.
func startServer(tb testing.TB, kind string) *server {
	tb.Helper()
	s := &server{kind: kind}
	switch kind {
	case Postgres:
		pg := harness.StartPostgres(tb)
		s.addr, s.dsn = pg.Addr(), pg.DSN()
	case MariaDB:
		m := harness.StartMariaDB(tb)
		s.addr, s.dsn = m.Addr(), m.DSN()
	default:
		tb.Fatalf("unknown kind %q", kind)
	}
	admin, err := OpenDB(kind, s.dsn, nil)
	if err != nil {
		tb.Fatal(err)
	}
	admin.SetMaxOpenConns(1)
	tb.Cleanup(func() { _ = admin.Close() })
	s.admin = admin
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := admin.ExecContext(ctx, seedDDL); err != nil {
		tb.Fatalf("%s: %v", kind, err)
	}
	return s
}

// through is the server's DSN with its address replaced by addr (a
// proxy's).
func (s *server) through(addr string) string { return strings.Replace(s.dsn, s.addr, addr, 1) }

// statementCounter names the server's counter statements returns.
func (s *server) statementCounter() string {
	if s.kind == Postgres {
		return "pg_stat_database xact_commit+xact_rollback"
	}
	return "Questions"
}

// counts are a server's counters of statements.
type counts struct {
	statements int64
	prepares   int64 // MariaDB's Com_stmt_prepare; 0 on PostgreSQL
}

func (c counts) sub(o counts) counts {
	return counts{c.statements - o.statements, c.prepares - o.prepares}
}

// statements reads the server's count of statements executed, once no
// other client is connected:
//
//   - PostgreSQL: the transactions of the database (pg_stat_database's
//     xact_commit + xact_rollback; pg_stat_statements is not loaded). An
//     autocommit statement is one transaction, so this counts statements
//     as long as the clients run no explicit transactions (none here
//     does). A backend reports its counts at most once a second, and
//     fully when it exits: so this waits until the other backends have
//     gone and the count stands still. The reads themselves, and
//     autovacuum, add a few.
//   - MariaDB: the global status Questions (statements the clients sent,
//     a prepared statement's executions included, its prepare and close
//     not), and Com_stmt_prepare apart: go-sql-driver/mysql prepares,
//     executes and closes every statement with arguments by default (no
//     interpolateParams), two round trips. Each read adds one Question.
func (s *server) statements(ctx context.Context) (counts, error) {
	if s.kind == MariaDB {
		rows, err := s.admin.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_stmt_prepare')")
		if err != nil {
			return counts{}, err
		}
		defer func() { _ = rows.Close() }()
		var c counts
		for rows.Next() {
			var name, v string
			if err := rows.Scan(&name, &v); err != nil {
				return counts{}, err
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return counts{}, fmt.Errorf("%s = %q: %w", name, v, err)
			}
			switch name {
			case "Questions":
				c.statements = n
			case "Com_stmt_prepare":
				c.prepares = n
			}
		}
		return c, rows.Err()
	}
	const q = `SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND backend_type = 'client backend' AND pid <> pg_backend_pid()),
		(SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database())`
	last := int64(-1)
	for range 100 { // at most 10 s
		var others, n int64
		if err := s.admin.QueryRowContext(ctx, q).Scan(&others, &n); err != nil {
			return counts{}, err
		}
		if others == 0 && n == last {
			return counts{statements: n}, nil
		}
		if others == 0 {
			last = n
		}
		select {
		case <-ctx.Done():
			return counts{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return counts{}, fmt.Errorf("postgres: other backends or a moving transaction count after 10 s")
}

// table prints a benchmark's table to the standard output (b.Log's output
// is cut to ten lines for benchmarks).
func table(b *testing.B, format string, args ...any) {
	fmt.Printf("=== %s: %s\n", b.Name(), fmt.Sprintf(format, args...))
}

// open opens a client of im on dsn, closed at tb's cleanup.
func open(ctx context.Context, tb testing.TB, im impl, dsn, name string, sent *atomic.Int64) client {
	tb.Helper()
	c, err := im.open(ctx, dsn, name, sent)
	if err != nil {
		tb.Fatalf("%s: %v", im.name, err)
	}
	tb.Cleanup(func() { _ = c.close() })
	return c
}

// once takes and releases the lock once.
func once(ctx context.Context, c client) error {
	release, err := c.lock(ctx)
	if err != nil {
		return err
	}
	return release(ctx)
}

func names(impls []impl) []string {
	out := make([]string, len(impls))
	for i, im := range impls {
		out[i] = im.name
	}
	return out
}

// BenchmarkSQLUncontended: acquire+release with no contention, on
// PostgreSQL and on MariaDB, one client of each implementation.
// lockbench.Alternate runs perIteration operations of each per
// iteration, interleaved, and reports each one's median and mean µs per
// operation with its ratio to the first's. The table adds operations per
// second (1/median), the statements each sends per operation (counted in
// the driver), and the statements the server executed per operation,
// from counting passes of countingOps and 2*countingOps operations of
// each implementation alone, each from opening a fresh client to its
// close (the least of countingRepeats passes of each size): their
// difference over countingOps leaves out opening and closing (see
// server.statements for what the server counts).
func BenchmarkSQLUncontended(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			s := startServer(b, kind)
			uncontended(b, s, implsFor(kind))
		})
	}
}

const (
	perIteration = 50
	countingOps  = 500
	// countingRepeats is how many counting passes of each size are made.
	countingRepeats = 2
	warmOps         = 20
)

func uncontended(b *testing.B, s *server, impls []impl) {
	ctx := bounded(b, benchLimit)
	clients := make([]client, len(impls))
	sent := make([]atomic.Int64, len(impls))
	for i, im := range impls {
		clients[i] = open(ctx, b, im, s.dsn, "uncontended-"+im.name, &sent[i])
		for range warmOps {
			if err := once(ctx, clients[i]); err != nil {
				b.Fatalf("%s: %v", im.name, err)
			}
		}
	}
	sent0 := make([]int64, len(impls))
	for i := range impls {
		sent0[i] = sent[i].Load()
	}
	took := make([][]time.Duration, len(impls))
	lockbench.Alternate(b, names(impls), perIteration, func(i int) error {
		start := time.Now()
		if err := once(ctx, clients[i]); err != nil {
			return fmt.Errorf("%s: %w", impls[i].name, err)
		}
		took[i] = append(took[i], time.Since(start))
		return nil
	})
	b.StopTimer()
	for i := range impls { // the counting passes want no other client
		_ = clients[i].close()
	}
	sentPerOp := make([]float64, len(impls))
	serverPerOp := make([]float64, len(impls))
	preparesPerOp := make([]float64, len(impls))
	for i, im := range impls {
		sentPerOp[i] = float64(sent[i].Load()-sent0[i]) / float64(len(took[i]))
		var deltas [2]counts
		for p, n := range []int{countingOps, 2 * countingOps} {
			// The least of countingRepeats passes: noise (autovacuum, the
			// reads) only adds.
			for k := range countingRepeats {
				d, err := countingPass(ctx, s, im, n)
				if err != nil {
					b.Fatalf("%s: counting pass: %v", im.name, err)
				}
				if k == 0 || d.statements < deltas[p].statements {
					deltas[p] = d
				}
			}
		}
		d := deltas[1].sub(deltas[0])
		serverPerOp[i] = float64(d.statements) / countingOps
		preparesPerOp[i] = float64(d.prepares) / countingOps
		b.ReportMetric(sentPerOp[i], im.name+"-sent/op")
		b.ReportMetric(serverPerOp[i], im.name+"-exec/op")
	}
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n| impl | median µs/op | acq+rel/s (1/median) | mean µs/op | p99 µs/op | /%s (median) | sent/op | executed/op (%s) | prepares/op |\n|---|---|---|---|---|---|---|---|---|\n",
		impls[0].name, s.statementCounter())
	med0 := lockbench.Median(took[0])
	for i, im := range impls {
		med := lockbench.Median(took[i])
		prepares := "-" // pgx prepares once per connection and statement
		if s.kind == MariaDB {
			prepares = fmt.Sprintf("%.2f", preparesPerOp[i])
		}
		fmt.Fprintf(&tab, "| %s | %.1f | %.0f | %.1f | %.1f | %.2f | %.2f | %.2f | %s |\n", im.name,
			us(med), 1/med.Seconds(), us(meanDuration(took[i])), us(lockbench.Quantile(took[i], 0.99)),
			float64(med)/float64(med0), sentPerOp[i], serverPerOp[i], prepares)
	}
	table(b, "%s, %d operations of each, alternating:%s", s.kind, len(took[0]), tab.String())
}

// countingPass opens a fresh client of im, makes n operations, closes it,
// and returns what the server counted meanwhile.
func countingPass(ctx context.Context, s *server, im impl, n int) (counts, error) {
	before, err := s.statements(ctx)
	if err != nil {
		return counts{}, err
	}
	c, err := im.open(ctx, s.dsn, "counting-"+im.name, nil)
	if err != nil {
		return counts{}, err
	}
	for range n {
		if err := once(ctx, c); err != nil {
			_ = c.close()
			return counts{}, err
		}
	}
	if err := c.close(); err != nil {
		return counts{}, err
	}
	after, err := s.statements(ctx)
	if err != nil {
		return counts{}, err
	}
	return after.sub(before), nil
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func meanDuration(xs []time.Duration) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range xs {
		sum += x
	}
	return sum / time.Duration(len(xs))
}
