package sqllock

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// companion is a MySQL lock's wake-up: a GET_LOCK name that the holder
// holds on a connection of its own while it holds the lock, and that
// waiters wait for inside the server (in arrival order: metadata locks
// are granted first come, first served). It is taken before the row and
// let go after it. The row stays the only source of truth: a waiter that
// gets the companion still takes the row, and waits for its expiry when
// it is held (by a holder whose companion connection died). A waiter
// never waits for the companion past the row's expiry: a holder whose
// connection went silent (a host gone, a partition) keeps its companion
// in the server until TCP keepalive ends its session, and its row
// expires long before; the waiter then takes the row without the
// companion.
//
// Only the queue's head waits for the companion: a second GET_LOCK name
// per lock, the head, is held by the first waiter, and the waiters behind
// it wait for the head in the server (in arrival order too). The head
// alone watches the holder's expiry (to take the lock of a holder that
// vanished), waking at each; it lets the head go in the statement that
// gets it the companion, which wakes the next waiter, now the head. The
// waiters behind send nothing until then but, every behindWait, a look
// at the row (a head that vanished in silence keeps its name in the
// server too): they take a row that no one took for a TTL after it was
// let go or expired, which a live head never leaves.
type companion struct{ name, head string }

// firstPause is the first pause of a holder of the companion that finds
// the row held by a holder without it.
const firstPause = 2 * time.Millisecond

func newCompanion(table, name string) *companion {
	return &companion{name: companionName(table, name), head: headName(table, name)}
}

// behindWait is how long a waiter behind the queue's head waits for the
// head before it looks at the row: three TTLs, which keeps the statements
// of those waiters at two per three TTLs (the wait and the look); the
// lock a head that vanished in silence leaves goes to one of them within
// a TTL and this of its release or expiry. Not jittered: waiters that
// queued in one order and look at once go back in that order.
func (l *Lock) behindWait() time.Duration { return 3 * l.ttl }

// pinned is a connection of a Lock's own, which holds its companion (or
// waits for it).
type pinned struct {
	c    *Client
	conn *sql.Conn
	name string // the companion's
	head string // the queue head's
	id   int64  // the server's id of the connection's session
	held bool   // the companion
	// first: it holds the queue's head (it is the first waiter).
	first bool
	// waiting: a wait for the companion was sent and not answered (ctx
	// ended, the connection failed): the server may still be in it, and
	// would grant it the companion when its turn came.
	waiting bool

	once sync.Once
}

// pin takes a connection of its own and tries the companion on it once;
// for a caller that waits (queue), only if no waiter holds the queue's
// head: it does not take the companion before the waiters then (the head
// may be between two waits for it). A TryAcquire tries it whatever the
// head: a head that vanished in silence keeps its name in the server for
// as long as the server keeps its session (hours), and a TryAcquire has
// no later look at the row to take a lock left free.
func (l *Lock) pin(ctx context.Context, queue bool) (*pinned, error) {
	conn, err := l.c.db.Conn(ctx)
	if err != nil {
		return nil, permanent(err)
	}
	p := &pinned{c: l.c, conn: conn, name: l.mysql.name, head: l.mysql.head}
	var got sql.NullInt64
	// The names are ours (hashes in hex), so they are written into the
	// text: with no arguments the driver sends no prepare.
	q := "SELECT CONNECTION_ID(), GET_LOCK('" + p.name + "', 0)"
	if queue {
		q = "SELECT CONNECTION_ID(), IF(IS_FREE_LOCK('" + p.head + "'), GET_LOCK('" + p.name + "', 0), 0)"
	}
	if err := conn.QueryRowContext(ctx, q).Scan(&p.id, &got); err != nil {
		p.discard()
		return nil, permanent(err)
	}
	p.held = got.Int64 == 1
	return p, nil
}

// queue waits in the server for the queue's head, for d at most. A wait
// left unanswered (ctx ended) is left waiting: leave ends it.
func (p *pinned) queue(ctx context.Context, d time.Duration) error {
	got, err := p.wait(ctx, fmt.Sprintf("SELECT GET_LOCK('%s', %.6f)", p.head, d.Seconds()))
	p.first = got
	return err
}

// await waits in the server for the companion, for d at most, and lets
// the queue's head go in the same statement once it has it: the next
// waiter is the head then. A wait left unanswered (ctx ended) is left
// waiting: leave ends it.
func (p *pinned) await(ctx context.Context, d time.Duration) error {
	got, err := p.wait(ctx, fmt.Sprintf("SELECT IF(GET_LOCK('%s', %.6f) = 1, RELEASE_LOCK('%s') IS NOT NULL, 0)", p.name, d.Seconds(), p.head))
	if got {
		p.held, p.first = true, false
	}
	return err
}

// wait runs q, a wait for a GET_LOCK name that answers 1 when it got it.
func (p *pinned) wait(ctx context.Context, q string) (bool, error) {
	var got sql.NullInt64
	p.waiting = true
	if err := p.conn.QueryRowContext(ctx, q).Scan(&got); err != nil {
		return false, permanent(err)
	}
	p.waiting = false
	if !got.Valid {
		return false, fmt.Errorf("%s answered NULL (killed?)", q)
	}
	return got.Int64 == 1, nil
}

// leaveHead lets the queue's head go, for a head that took the row
// without the companion (its holder vanished): the next waiter watches
// the new holder's expiry. Failed, it is let go with the lease, and the
// waiters behind look at the row every behindWait meanwhile.
func (p *pinned) leaveHead(ctx context.Context) {
	if _, err := p.conn.ExecContext(ctx, "DO RELEASE_LOCK('"+p.head+"')"); err == nil {
		p.first = false
	}
}

// kill ends the server session id, whose client gave up on a GET_LOCK
// wait: the wait goes on in the server after its client gave up (until
// the server notices that the connection is gone), and would be granted
// the companion when its turn came. A session already gone is not an
// error.
func (c *Client) kill(ctx context.Context, id int64) error {
	_, err := c.db.ExecContext(ctx, fmt.Sprintf("KILL %d", id))
	if m := mysqlError.FindStringSubmatch(fmt.Sprint(err)); m != nil && m[1] == "1094" { // ER_NO_SUCH_THREAD
		return nil
	}
	return permanent(err)
}

// release lets the companion go (and the queue's head, when it holds
// it) and gives the connection back to the pool, once; a connection
// that could not let them go is closed instead (which lets them go): it
// never goes back to the pool holding one.
func (p *pinned) release() {
	p.once.Do(func() {
		ctx, stop := context.WithTimeout(context.Background(), cancelTimeout)
		defer stop()
		q := "DO RELEASE_LOCK('" + p.name + "')"
		if p.first {
			q = "DO RELEASE_LOCK('" + p.name + "'), RELEASE_LOCK('" + p.head + "')"
		}
		if _, err := p.conn.ExecContext(ctx, q); err != nil {
			_ = p.conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		_ = p.conn.Close()
	})
}

// discard closes the connection (the server then lets whatever it holds
// go), once.
func (p *pinned) discard() {
	p.once.Do(func() {
		_ = p.conn.Raw(func(any) error { return driver.ErrBadConn })
		_ = p.conn.Close()
	})
}

func (l *Lock) acquireMySQL(ctx context.Context, wait bool, a *hold.Acquisition) (*hold.Lease, error) {
	var backoff ttl.Backoff
	for {
		// An id of its own for each try: a release of an earlier one that
		// goes on in the background (a take refused as too late) must not
		// free this one's row.
		me := uuid.NewString()
		err := l.c.check(ctx)
		var p *pinned
		if err == nil {
			p, err = l.pin(ctx, wait)
		}
		if err == nil {
			var le *hold.Lease
			if le, err = l.takeRow(ctx, p, me, wait, a); err == nil {
				return le, nil
			}
			l.leave(ctx, me, p, errors.Is(err, recipes.ErrLocked))
		}
		switch {
		case ctx.Err() != nil:
			return nil, recipes.NotAcquired(ctx)
		case errors.Is(err, recipes.ErrLocked):
			return nil, fmt.Errorf("%w: %s", recipes.ErrLocked, l)
		case !wait || errors.Is(err, ttl.ErrPermanent):
			return nil, fmt.Errorf("%w: %w", recipes.ErrNotAcquired, errDB("acquire "+l.name, err))
		}
		if !ttl.Sleep(ctx, ttl.Jitter(backoff.Next())) {
			// The try before failed: the outage is the news, not a
			// lock held.
			return nil, recipes.NotAcquiredAfter(ctx, errDB("acquire "+l.name, err))
		}
	}
}

// leave ends a try that did not get the lock, before Acquire returns,
// bounded by cancelTimeout whatever ctx says: a wait for the companion
// the server may still be in is killed (its connection closed), the row
// is let go if a take of it may have landed (its reply lost, or
// abandoned when ctx ended), then the companion. Refused (ErrLocked), no
// take landed, and it only lets the companion go. What the database
// does not confirm in time goes on in the background, on the Client's
// clean-ups (Close waits for them), until the row and the wait would
// have ended anyway (a TTL: the row's, and the longest a wait lasts).
func (l *Lock) leave(ctx context.Context, me string, p *pinned, refused bool) {
	until := time.Now().Add(l.ttl)
	lctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer stop()
	if p.waiting {
		if err := l.c.kill(lctx, p.id); err != nil && !errors.Is(err, ttl.ErrPermanent) {
			l.c.bg.Go(ctx, func(bg context.Context) {
				kctx, stop := context.WithDeadline(bg, until)
				defer stop()
				_ = ttl.Retry(kctx, 0, func() error { return l.c.kill(kctx, p.id) })
			})
		}
		p.discard()
	}
	if refused {
		p.release()
		return
	}
	srv := &mysqlServer{l: l, me: me, pin: p}
	if err := srv.Free(lctx); err != nil && !errors.Is(err, ttl.ErrNotOurs) && !errors.Is(err, ttl.ErrPermanent) {
		ttl.FreeInBackground(&l.c.bg, ctx, srv, until)
	}
}

// takeRow takes the row for me, p holding the companion or not: at once
// when it is free, else (wait) once the companion comes or, at the
// latest, at the holder's expiry, waiting first to be the queue's head.
// ErrLocked when it is held and wait is false. It tells a when it finds
// the lock held.
func (l *Lock) takeRow(ctx context.Context, p *pinned, me string, wait bool, a *hold.Acquisition) (*hold.Lease, error) {
	s := l.c.sql
	if !wait && !p.held {
		// Held, or being handed to the waiter that holds the companion
		// now, or waited for: TryAcquire does not jump the queue.
		a.Queued()
		return nil, recipes.ErrLocked
	}
	pause := firstPause
	// look: the head's wait for the companion ended unanswered, at the
	// holder's expiry as it was then, or the waiter just became the
	// head; the holder has renewed it since, or was just handed it, most
	// often, so the row's remaining time is read first, and the take
	// sent only when it is up: two statements a wake, not three.
	look := false
	for {
		if !p.held && !p.first {
			// Behind the head (or no head yet: the wait is answered at
			// once). The row is looked at only when the wait ends unanswered.
			a.Queued()
			if err := p.queue(ctx, l.behindWait()); err != nil {
				return nil, err
			}
			if !p.first {
				if le, err := l.takeLeft(ctx, p, me); le != nil || err != nil {
					return le, err
				}
				continue
			}
			look = true
		}
		// Without the companion, a row let go is left for a TTL to the
		// waiter that has it (see companion).
		grace := int64(0)
		if !p.held {
			grace = l.ttl.Microseconds()
		}
		if !look {
			sent := time.Now()
			res, err := l.c.exec(ctx, s.take, grace, 0, me, me, me, me, l.ttl.Microseconds(), l.name)
			if err != nil {
				return nil, permanent(err)
			}
			if token, err := res.LastInsertId(); err == nil && token > 0 {
				if p.first {
					// Taken at the holder's expiry, without the companion.
					p.leaveHead(ctx)
				}
				return ttl.Hold(ctx, l, token, true, sent, l.terms, &mysqlServer{l: l, me: me, pin: p}, &l.c.bg)
			}
		}
		look = false
		var remaining int64
		err := l.c.queryRow(ctx, s.remaining, grace, l.name).Scan(&remaining)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// The lock's first use: its row is made, once and for all.
			if _, err := l.c.exec(ctx, s.create, l.name); err != nil {
				return nil, permanent(err)
			}
			continue
		case err != nil:
			return nil, permanent(err)
		case remaining == 0:
			continue // let go meanwhile, or expired: take it
		}
		// The row is held: the call waits, or TryAcquire is refused.
		a.Queued()
		if !wait {
			return nil, recipes.ErrLocked
		}
		d := min(ttl.Jitter(time.Duration(remaining)*time.Microsecond), l.ttl)
		if p.held {
			// Held by a holder without the companion: one that took a row
			// never used (or let go a TTL ago) while we were taking the
			// companion, whose release wakes no one, or one whose
			// connection died or went silent, whose expiry tells. Look
			// again after a pause that doubles up to the expiry.
			if !ttl.Sleep(ctx, min(d, ttl.Jitter(pause))) {
				return nil, ctx.Err()
			}
			pause = min(2*pause, l.ttl)
			continue
		}
		if err := p.await(ctx, d); err != nil {
			return nil, err
		}
		look = !p.held
	}
}

// takeLeft takes the row for a waiter behind the queue's head if no one
// took it for a TTL after it was let go or expired: the head would have
// (it gets the companion when the row is let go, and wakes at its
// expiry), so the head vanished. Nil and nil when the row is not taken.
func (l *Lock) takeLeft(ctx context.Context, p *pinned, me string) (*hold.Lease, error) {
	grace := l.ttl.Microseconds()
	sent := time.Now()
	res, err := l.c.exec(ctx, l.c.sql.take, grace, grace, me, me, me, me, l.ttl.Microseconds(), l.name)
	if err != nil {
		return nil, permanent(err)
	}
	if token, err := res.LastInsertId(); err == nil && token > 0 {
		return ttl.Hold(ctx, l, token, true, sent, l.terms, &mysqlServer{l: l, me: me, pin: p}, &l.c.bg)
	}
	return nil, nil
}

// mysqlServer is a holding's row, and the companion it holds.
type mysqlServer struct {
	l   *Lock
	me  string
	pin *pinned
}

func (s *mysqlServer) Renew(ctx context.Context) error {
	return rowsOrNotOurs(s.l.c.exec(ctx, s.l.c.sql.renew, s.l.ttl.Microseconds(), s.l.name, s.me))
}

// Free lets the row go, then the companion (which wakes the next
// waiter), whatever the row's release gave: a row that could not be let
// go is retried by the caller, and expires at its TTL at the latest.
func (s *mysqlServer) Free(ctx context.Context) error {
	err := ttl.Retry(ctx, freeTries, func() error {
		return rowsOrNotOurs(s.l.c.exec(ctx, s.l.c.sql.release, s.l.name, s.me))
	})
	s.pin.release()
	return err
}

// stmt is query prepared on the Client's pool, once (database/sql then
// prepares it on each connection once): go-sql-driver/mysql otherwise
// prepares and closes every statement with arguments, three round trips
// for one.
func (c *Client) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	st := c.stmts[query]
	c.mu.Unlock()
	if st != nil {
		return st, nil
	}
	// Prepared outside the mutex: a slow server must not hold up the
	// Client's other statements (a renewal among them).
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if first := c.stmts[query]; first != nil {
		_ = st.Close()
		return first, nil
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[query] = st
	return st, nil
}

func (c *Client) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// errRow is a *sql.Row's Scan that fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func (c *Client) queryRow(ctx context.Context, query string, args ...any) interface{ Scan(...any) error } {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}
