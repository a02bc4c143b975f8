// Package pgxlisten is the Listener of compat/sqllock over pgx
// (github.com/jackc/pgx/v5): the connection of its own on which a
// PostgreSQL Client's waiters hear that a release handed them the lock.
// It is a module of its own, so that the lock links no driver.
//
//	config, _ := pgx.ParseConfig("postgres://app@db:5432/app") // the server itself, not a transaction pooler
//	c, _ := sqllock.NewClient(db, sqllock.PostgreSQL, sqllock.WithListener(pgxlisten.New(config)))
//
// LISTEN is session state: behind PgBouncer in transaction mode, give the
// listener a configuration that reaches the server directly (or a pooler
// in session mode), and the *sql.DB the pooler.
package pgxlisten

import (
	"github.com/jackc/pgx/v5"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/internal/pgxlisten"
)

// New returns a Listener that connects with config (copied for each
// connection): it LISTENs, and connects again when the connection fails.
func New(config *pgx.ConnConfig) sqllock.Listener { return pgxlisten.New(config) }

// Parse returns a Listener that connects with the connection string dsn
// (a URL or keyword/value string, as pgx.ParseConfig takes).
func Parse(dsn string) (sqllock.Listener, error) {
	l, err := pgxlisten.Parse(dsn)
	if err != nil {
		return nil, err
	}
	return l, nil
}
