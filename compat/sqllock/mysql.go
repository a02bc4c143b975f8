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
type companion struct{ name string }

// firstPause is the first pause of a holder of the companion that finds
// the row held by a holder without it.
const firstPause = 2 * time.Millisecond

func newCompanion(table, name string) *companion { return &companion{name: companionName(table, name)} }

// pinned is a connection of a Lock's own, which holds its companion (or
// waits for it).
type pinned struct {
	c    *Client
	conn *sql.Conn
	name string
	id   int64 // the server's id of the connection's session
	held bool  // the companion
	// waiting: a wait for the companion was sent and not answered (ctx
	// ended, the connection failed): the server may still be in it, and
	// would grant it the companion when its turn came.
	waiting bool

	once sync.Once
}

// pin takes a connection of its own and tries the companion on it once.
func (l *Lock) pin(ctx context.Context) (*pinned, error) {
	conn, err := l.c.db.Conn(ctx)
	if err != nil {
		return nil, permanent(err)
	}
	p := &pinned{c: l.c, conn: conn, name: l.mysql.name}
	var got sql.NullInt64
	// The name is ours (a hash in hex), so it is written into the text:
	// with no arguments the driver sends no prepare.
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID(), GET_LOCK('"+p.name+"', 0)").Scan(&p.id, &got); err != nil {
		p.discard()
		return nil, permanent(err)
	}
	p.held = got.Int64 == 1
	return p, nil
}

// await waits in the server for the companion, for d at most. A wait
// left unanswered (ctx ended) is left waiting: leave ends it.
func (p *pinned) await(ctx context.Context, d time.Duration) error {
	var got sql.NullInt64
	q := fmt.Sprintf("SELECT GET_LOCK('%s', %.6f)", p.name, d.Seconds())
	p.waiting = true
	if err := p.conn.QueryRowContext(ctx, q).Scan(&got); err != nil {
		return permanent(err)
	}
	p.waiting = false
	if !got.Valid {
		return fmt.Errorf("GET_LOCK(%q) answered NULL (killed?)", p.name)
	}
	p.held = got.Int64 == 1
	return nil
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

// release lets the companion go and gives the connection back to the
// pool, once; a connection that could not let it go is closed instead
// (which lets it go): it never goes back to the pool holding it.
func (p *pinned) release() {
	p.once.Do(func() {
		ctx, stop := context.WithTimeout(context.Background(), cancelTimeout)
		defer stop()
		if _, err := p.conn.ExecContext(ctx, "DO RELEASE_LOCK('"+p.name+"')"); err != nil {
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
			p, err = l.pin(ctx)
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
// latest, at the holder's expiry. ErrLocked when it is held and wait is
// false. It tells a when it finds the lock held.
func (l *Lock) takeRow(ctx context.Context, p *pinned, me string, wait bool, a *hold.Acquisition) (*hold.Lease, error) {
	s := l.c.sql
	if !wait && !p.held {
		// Held, or being handed to the waiter that holds the companion
		// now: TryAcquire does not jump the queue.
		a.Queued()
		return nil, recipes.ErrLocked
	}
	pause := firstPause
	for {
		// Without the companion, a row let go is left for a TTL to the
		// waiter that has it (see companion).
		grace := int64(0)
		if !p.held {
			grace = l.ttl.Microseconds()
		}
		sent := time.Now()
		res, err := l.c.exec(ctx, s.take, grace, me, me, me, me, l.ttl.Microseconds(), l.name)
		if err != nil {
			return nil, permanent(err)
		}
		if token, err := res.LastInsertId(); err == nil && token > 0 {
			return ttl.Hold(ctx, l, token, true, sent, l.terms, &mysqlServer{l: l, me: me, pin: p}, &l.c.bg)
		}
		var remaining int64
		err = l.c.queryRow(ctx, s.remaining, grace, l.name).Scan(&remaining)
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
			continue // let go meanwhile
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
	}
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
