// Package sqlbench benchmarks SQL locks side by side, on the same local
// PostgreSQL or MariaDB server in one run, the implementations
// alternating: PostgreSQL's session advisory lock on a pinned connection
// (pg_advisory_lock/pg_advisory_unlock), golang-migrate's PostgreSQL
// driver lock (an advisory lock too), MariaDB's GET_LOCK/RELEASE_LOCK on
// a pinned connection, and the seed table recipe as users write it (INSERT
// a row, retry on a duplicate key every millisecond, DELETE it by name)
// on both servers. compat/sqllock joins them through sqllockImpls
// (impls_test.go). The servers are the harness's
// (internal/testkit/harness: StartPostgres, StartMariaDB, StartPgBouncer,
// NewProxy); without them every benchmark and test here is skipped, or
// fails with ZKR_REQUIRE_INTEGRATION=1.
//
//	cd integration
//	export ZKR_REQUIRE_INTEGRATION=1
//	go test -run '^$' -timeout 30m -bench SQLUncontended -benchtime 20x ./sqlbench/
//	go test -run '^$' -timeout 30m -bench SQLContended -benchtime 3x ./sqlbench/
//	go test -run '^$' -timeout 30m -bench SQLTakeover -benchtime 1x ./sqlbench/
//	go test -run '^$' -timeout 30m -bench SQLWaiting -benchtime 3x ./sqlbench/
//	go test -run '^$' -timeout 30m -bench SQLProbeUncontended -benchtime 20x ./sqlbench/
//	go test -run TestAdvisoryLockThroughPgBouncer -v ./sqlbench/
//
// A sub-benchmark per server: add /postgres or /mariadb to -bench (e.g.
// -bench 'SQLContended/mariadb'). Each prints its table on the standard
// output (lines starting with "=== BenchmarkSQL..."), besides the metrics
// on the benchmark's line. An iteration of SQLContended is one round of
// 3 s of each implementation; one of SQLTakeover up to 10 s of each.
//
// Statements are counted two ways. Sent: OpenDB wraps the driver so that
// each client counts every query or exec it sends (prepares and closes
// not). Executed, in SQLUncontended: the server's own counter, PostgreSQL's
// transactions of the database (pg_stat_database xact_commit +
// xact_rollback; pg_stat_statements is not available, and an autocommit
// statement is one transaction, which is good enough here since no client
// opens a transaction) and MariaDB's Questions (a prepared statement's
// executions, not its prepare or close), with Com_stmt_prepare apart:
// go-sql-driver/mysql prepares, executes and closes every statement with
// arguments by default (no interpolateParams), two round trips each.
//
// SQLWaiting counts what sqllock's waiters cost the server while a
// holder holds the lock past its TTL: the server's counter over two
// windows, their difference per waiter-second (SQLBENCH_WAITING_LONG
// sets the long window).
//
// SQLProbeUncontended (PostgreSQL) puts the seed table and sqllock beside
// the statements of sqllock's earlier one-UPDATE path, of its plain
// INSERT and DELETE, and of the seed, sent in other ways: where
// sqllock's uncontended time goes.
//
// TestAdvisoryLockThroughPgBouncer shows a known failure of the advisory
// lock: through PgBouncer in transaction mode two clients both get it.
//
// The package is test support: nothing here is API.
package sqlbench
