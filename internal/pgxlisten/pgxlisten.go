// Package pgxlisten is sqllock.Listener over pgx: one connection of its
// own, LISTEN, and its notifications. It is shared by zklock, the tests
// and the public adapter module github.com/zkrecipes/zkrecipes/contrib/pgxlisten;
// it links pgx, so the lock package does not.
package pgxlisten

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// closeTimeout bounds the goodbye to the server when listening ends.
const closeTimeout = time.Second

// Listener listens over connections made from a pgx configuration.
type Listener struct {
	config *pgx.ConnConfig
}

// New returns a Listener connecting with config (a copy is made for each
// connection).
func New(config *pgx.ConnConfig) *Listener { return &Listener{config: config} }

// Parse returns a Listener connecting with the connection string dsn (a
// URL or keyword/value string, as pgx.ParseConfig takes).
func Parse(dsn string) (*Listener, error) {
	config, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	return New(config), nil
}

// Listen connects, runs LISTEN channel, calls ready, and calls notify with
// each notification's payload until ctx ends or the connection fails.
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
