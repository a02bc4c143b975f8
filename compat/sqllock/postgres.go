package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/compat/internal/grants"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
)

// The operations of the PostgreSQL function.
const (
	opAcquire = "acquire" // take it if free, never queue (TryAcquire)
	opQueue   = "queue"   // take it if free, or queue
	opRelease = "release" // leave the queue, and release if held
)

// pgWaiting is one Acquire or TryAcquire of a PostgreSQL lock by the
// waiter me ("channel/id"), as grants.Wait drives it: every way out but
// success takes the waiter out of the table.
type pgWaiting struct {
	l     *Lock
	id    string
	me    string
	sent  time.Time     // of its last attempt
	entry time.Duration // how long the queue entry of its last attempt lives
}

var _ grants.Queue = (*pgWaiting)(nil)

// waiterSeq numbers the waiters of the process: with a listener, a
// waiter's id is its number (base 36), unique in its Client's channel,
// which is unique itself; short ids keep the row's queue small (every
// operation writes the row anew).
var waiterSeq atomic.Uint64

func (l *Lock) acquirePostgres(ctx context.Context, wait bool, a *hold.Acquisition) (*hold.Lease, error) {
	id := uuid.NewString() // no listener: the channel is empty, the id unique alone
	if l.c.channel != "" {
		id = strconv.FormatUint(waiterSeq.Add(1), 36)
	}
	return grants.Wait(ctx, &pgWaiting{l: l, id: id, me: l.c.channel + "/" + id}, wait, l.ttl, a)
}

// take runs op (opAcquire or opQueue) for the waiter me, as call does:
// first by the plain INSERT (pgInsert), which takes a lock with no row,
// unless the Lock is busy; then, when the row exists, by the function.
func (l *Lock) take(ctx context.Context, op, me string, entry time.Duration, sent time.Time) (code int, n int64, err error) {
	if !l.busy.Load() {
		if err := l.c.check(ctx); err != nil {
			return 0, 0, err
		}
		switch err := l.c.db.QueryRowContext(ctx, l.c.sql.insert, l.name, me, l.ttl.Microseconds()).Scan(&n); {
		case err == nil:
			return 1, n, nil
		case !errors.Is(err, sql.ErrNoRows):
			return 0, 0, permanent(err)
		}
		l.busy.Store(true)
	}
	return l.call(ctx, op, me, entry, sent)
}

// free lets the lock go if me holds it, and takes me out of the queue:
// first by the plain DELETE (pgDelete), which deletes a row we hold that
// nobody waits for, unless the Lock is busy; then by the function, which
// hands the lock on. ttl.ErrNotOurs when me did not hold it.
func (l *Lock) free(ctx context.Context, me string) error {
	if !l.busy.Load() {
		err := rowsOrNotOurs(l.c.db.ExecContext(ctx, l.c.sql.remove, l.name, me))
		if !errors.Is(err, ttl.ErrNotOurs) {
			return err
		}
		l.busy.Store(true)
	}
	code, n, err := l.call(ctx, opRelease, me, l.waitTTL(), time.Now())
	switch {
	case err != nil:
		return err
	case code == 0:
		l.busy.Store(n != 0)
		return ttl.ErrNotOurs
	}
	l.busy.Store(n != 0) // the row stays when the lock went on to a waiter
	return nil
}

// call runs op for the waiter me, whose queue entry (op queue) lives
// entry: code 1 and the token when it holds the lock, code 0 and the
// holder's remaining TTL otherwise (2 or 3 with live waiters ahead).
func (l *Lock) call(ctx context.Context, op, me string, entry time.Duration, sent time.Time) (code int, n int64, err error) {
	if err := l.c.check(ctx); err != nil {
		return 0, 0, err
	}
	err = l.c.db.QueryRowContext(ctx, l.c.sql.call, op, l.name, me, l.ttl.Microseconds(),
		entry.Microseconds(), grants.Stamp(sent)).Scan(&code, &n)
	return code, n, permanent(err)
}

// waitTTL is how long a waiter's queue entry lives without a refresh: a
// waiter at the head of the queue, or next to it, refreshes it at least
// every TTL or two (its timer), so a waiter that crashed is skipped
// after three.
func (l *Lock) waitTTL() time.Duration { return 3 * l.ttl }

// farTTL is how long the queue entry of a waiter with two or more live
// waiters ahead lives: the function makes it twice waitTTL, six TTLs
// (its code 3). With a listener, that waiter refreshes it every five
// TTLs (farTTL less a TTL, as refreshBehind), which cuts its statements
// to two fifths while the lock is held for long; without one, every
// two, as the next waiter does (a grant to it would wait for its
// timer). The cost: when the two ahead of it have left (given up or
// crashed) and the holder crashes too, the lock waits for this one's
// refresh, up to five TTLs after its last one.
func (l *Lock) farTTL() time.Duration { return 2 * l.waitTTL() } // as the function computes it

// refreshBehind is how often a waiter behind a live waiter refreshes its
// queue entry, which lives entry: a TTL before the entry would expire,
// which leaves room for a refresh that fails and is tried again. Only
// the first live waiter wakes at the holder's expiry (a crashed holder's
// lock goes to it first); the others wake for a grant or for this. With
// one live waiter ahead (the entry lives waitTTL, so two TTLs) the cost
// is in a double fault only: when the first waiter gives up or dies, the
// next one watches the holder's expiry from its next refresh on. Further
// back, see farTTL.
func refreshBehind(entry, lockTTL time.Duration) time.Duration { return entry - lockTTL }

func (w *pgWaiting) String() string { return w.l.String() }

// Watch registers the waiter on its Client's listener, if it has one.
func (w *pgWaiting) Watch() *grants.Watcher {
	if w.l.c.board == nil {
		return nil
	}
	return w.l.c.board.Watch(w.id)
}

// Attempt runs the function once: opQueue to queue, else opAcquire.
func (w *pgWaiting) Attempt(ctx context.Context, queue bool, sent time.Time) (grants.Outcome, error) {
	op := opAcquire
	if queue {
		op = opQueue
	}
	// Until its answer says otherwise, the call may have made the entry
	// live as long as farTTL (GiveUp's clean-up goes on until then).
	w.sent, w.entry = sent, w.l.farTTL()
	code, n, err := w.l.take(ctx, op, w.me, w.l.waitTTL(), sent)
	if err == nil && code != 3 {
		w.entry = w.l.waitTTL()
	}
	wait := time.Duration(n) * time.Microsecond
	switch {
	case err != nil:
		return grants.Outcome{}, errDB("acquire "+w.l.name, err)
	case code == 1:
		return grants.Outcome{Acquired: true, Token: n}, nil
	case code == 2:
		// Behind a live waiter, which watches the holder's expiry.
		return grants.Outcome{Wait: wait, Refresh: refreshBehind(w.entry, w.l.ttl)}, nil
	case code == 3:
		// Further back: the entry lives farTTL.
		if w.l.c.board == nil {
			return grants.Outcome{Wait: wait, Refresh: refreshBehind(w.l.waitTTL(), w.l.ttl)}, nil
		}
		return grants.Outcome{Wait: wait, Refresh: refreshBehind(w.entry, w.l.ttl)}, nil
	}
	return grants.Outcome{Wait: wait}, nil
}

func (w *pgWaiting) Trusts(g grants.Grant) bool {
	return grants.Fresh(g, w.l.terms.Valid, w.l.terms.Every)
}

func (w *pgWaiting) Hold(ctx context.Context, token int64, sent time.Time) (*hold.Lease, error) {
	return w.l.hold(ctx, w.me, token, sent)
}

// GiveUp takes the waiter out of the queue, and releases the lock if it
// was handed to it meanwhile. At once, bounded by cancelTimeout whatever
// ctx says: nothing of the waiter is left in the row when Acquire
// returns. If the database does not answer in time, the removal goes on
// in the background, on the Client's clean-ups (Close waits for them),
// until the entry would have expired anyway (a lock handed to it expires
// a TTL after the grant, before that), counted from the send time of its
// last attempt.
func (w *pgWaiting) GiveUp(ctx context.Context) {
	srv := pgServer{w.l, w.me}
	lctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer stop()
	switch ferr := srv.Free(lctx); {
	case ferr == nil, errors.Is(ferr, ttl.ErrNotOurs):
		// Out of the queue (ErrNotOurs: it did not hold the lock).
	case errors.Is(ferr, ttl.ErrPermanent):
		// The database refuses it (closed, a password refused): the entry
		// expires by itself.
	default:
		ttl.FreeInBackground(&w.l.c.bg, ctx, srv, w.sent.Add(w.entry+w.l.ttl))
	}
}
