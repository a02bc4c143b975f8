package sqllock

import (
	"context"
	"database/sql"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
)

// hold turns a PostgreSQL acquisition sent at sent into a lease.
func (l *Lock) hold(ctx context.Context, me string, token int64, sent time.Time) (*hold.Lease, error) {
	return ttl.Hold(ctx, l, token, true, sent, l.terms, pgServer{l, me}, &l.c.bg)
}

// pgServer is a holding's row in PostgreSQL.
type pgServer struct {
	l  *Lock
	me string
}

// Renew extends the row's expiry if it is still ours (the watchdog tries
// again after errors: a pooler or a failover makes short ones common).
func (s pgServer) Renew(ctx context.Context) error {
	return rowsOrNotOurs(s.l.c.db.ExecContext(ctx, s.l.c.sql.renew, s.l.name, s.me, s.l.ttl.Microseconds()))
}

// Free releases the row if it is still ours, and hands it to the next
// waiter.
func (s pgServer) Free(ctx context.Context) error {
	return ttl.Retry(ctx, freeTries, func() error { return s.l.free(ctx, s.me) })
}

// freeTries is how many times a release is tried before it goes on in
// the background: a pool's connection that died with a restart of the
// server fails once.
const freeTries = 3

// rowsOrNotOurs is the error of a statement that changes our row:
// ttl.ErrNotOurs when it changed none.
func rowsOrNotOurs(res sql.Result, err error) error {
	if err != nil {
		return permanent(err)
	}
	n, err := res.RowsAffected()
	switch {
	case err != nil:
		return err
	case n == 0:
		return ttl.ErrNotOurs
	}
	return nil
}
