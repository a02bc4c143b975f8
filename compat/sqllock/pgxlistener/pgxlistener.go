// Package pgxlistener is sqllock's Listener over pgx
// (github.com/jackc/pgx/v5): the connection of its own on which a
// PostgreSQL Client's waiters hear that a release handed them the lock.
// It is a package of its own so that compat/sqllock links no driver: only
// the programs that import this package link pgx.
//
//	config, _ := pgx.ParseConfig("postgres://app@db:5432/app") // the server itself, not a transaction pooler
//	c, _ := sqllock.NewClient(db, sqllock.PostgreSQL, sqllock.WithListener(pgxlistener.New(config)))
//
// LISTEN is session state: behind PgBouncer in transaction mode, give the
// listener a configuration that reaches the server directly (or a pooler
// in session mode), and the *sql.DB the pooler.
//
// When its connection fails, Listen returns why; the Client calls it
// again after a pause, and its waiters go by their timers meanwhile.
package pgxlistener

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// closeTimeout bounds the goodbye to the server when listening ends.
const closeTimeout = time.Second

// Listener listens over connections made from a pgx configuration.
type Listener struct {
	config *pgx.ConnConfig
}

var _ sqllock.Listener = (*Listener)(nil)

// New returns a Listener that connects with config (copied for each
// connection): it LISTENs, and connects again each time the Client calls
// Listen after a failure. A nil config is refused with an error that is
// recipes.ErrInvalidArgument.
func New(config *pgx.ConnConfig) (*Listener, error) {
	if config == nil {
		return nil, fmt.Errorf("pgxlistener: %w: nil *pgx.ConnConfig", recipes.ErrInvalidArgument)
	}
	return &Listener{config: config}, nil
}

// Parse returns a Listener that connects with the connection string dsn
// (a URL or keyword/value string, as pgx.ParseConfig takes); a dsn that
// pgx cannot parse is refused with an error that is
// recipes.ErrInvalidArgument and says why.
func Parse(dsn string) (*Listener, error) {
	config, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgxlistener: %w: %w", recipes.ErrInvalidArgument, err)
	}
	return New(config)
}

// Listen connects, runs LISTEN channel, calls ready, and calls notify with
// each notification's payload until ctx ends or the connection fails; it
// returns why.
func (l *Listener) Listen(ctx context.Context, channel string, ready func(), notify func(payload string)) error {
	conn, err := pgx.ConnectConfig(ctx, l.config.Copy())
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	ready()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		notify(n.Payload)
	}
}
