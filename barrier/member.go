package barrier

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/session"
)

// DefaultCleanupTimeout bounds the deletion of a member's node after Enter
// or Leave failed, which runs even when the caller's context has ended.
const DefaultCleanupTimeout = 10 * time.Second

// member is one member node of a double barrier: its path, its name and
// the session that owns it (its ephemeralOwner).
type member struct {
	c     *session.Client
	path  string
	name  string
	owner int64
}

// lost is the error for a member whose node is gone, with why (nil when
// the node was found missing).
func (m *member) lost(why error) error {
	if why == nil {
		return fmt.Errorf("%w: %w: %s (session 0x%x) is gone", ErrNotThrough, ErrMemberLost, m.path, m.owner)
	}
	return fmt.Errorf("%w: %w: %s (session 0x%x): %w", ErrNotThrough, ErrMemberLost, m.path, m.owner, why)
}

// ended carries, as the cause of a follower's context, the error that
// ends the member's wait; notThrough returns it as it is.
type ended struct{ err error }

func (e *ended) Error() string { return e.err.Error() }
func (e *ended) Unwrap() error { return e.err }

// follower follows the client's state changes during one Enter or Leave,
// for its member. Its context ends the wait, and every request in flight,
// as soon as the client is closed or, while the member's node counts
// (holding), the session that owns it ends: a request blocked on a
// connection that will not come back is not waited out.
type follower struct {
	m       *member
	ctx     context.Context
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when follow returns
	holding atomic.Bool

	mu        sync.Mutex
	suspended bool          // as of the changes read
	changed   chan struct{} // closed, and replaced, on every change read
}

// follow starts following for m from now on, under ctx; the owner of m's
// node (m.owner) must be known. stop ends it.
func follow(ctx context.Context, m *member) (*follower, error) {
	fctx, cancel := context.WithCancelCause(ctx)
	states, err := m.c.Subscribe(fctx)
	if err != nil {
		cancel(nil)
		return nil, notThrough(ctx, err)
	}
	f := &follower{m: m, ctx: fctx, cancel: cancel, done: make(chan struct{}), changed: make(chan struct{})}
	f.holding.Store(true)
	go f.run(states)
	return f, nil
}

// run reads the state changes until the subscription ends with f.ctx.
func (f *follower) run(states <-chan session.StateChange) {
	defer close(f.done)
	for ch := range states {
		if err := f.note(ch); err != nil {
			f.cancel(&ended{err})
		}
	}
}

// note reads one state change and returns the error that ends the wait,
// if it does.
func (f *follower) note(ch session.StateChange) error {
	f.mu.Lock()
	switch ch.State {
	case session.Suspended, session.Lost:
		f.suspended = true
	case session.Connected, session.Reconnected, session.ReadOnly:
		f.suspended = false
	}
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	m := f.m
	switch {
	case ch.State == session.Closed:
		return fmt.Errorf("%w: %w (member %s)", ErrNotThrough, session.ErrClosed, m.path)
	case !f.holding.Load():
		return nil
	case ch.State == session.Lost && ch.SessionID == m.owner:
		return m.lost(ch.Err)
	case (ch.State == session.Reconnected || ch.State == session.Connected) && ch.SessionID != m.owner:
		// A new session: the owner's ephemeral node goes with the old one
		// (at once, or when the server expires it).
		return m.lost(fmt.Errorf("the client moved to session 0x%x", ch.SessionID))
	}
	return nil
}

// stop ends the following and waits for its goroutine.
func (f *follower) stop() {
	f.cancel(nil)
	<-f.done
}

// state is whether the connection is suspended, and a channel closed on
// the next change.
func (f *follower) state() (bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.suspended, f.changed
}

// settle waits while the connection is suspended: there is nothing to
// look at until the client is connected again.
func (f *follower) settle() error {
	for {
		suspended, changed := f.state()
		if !suspended {
			return nil
		}
		select {
		case <-changed:
		case <-f.ctx.Done():
			return notThrough(f.ctx, nil)
		}
	}
}

// failed decides on a request that failed with err: nil to look again
// once the connection is back, when err came of a suspended connection (a
// suspension is waited out); else the error (the member's loss, when that
// is why).
func (f *follower) failed(err error) error {
	if suspended, _ := f.state(); !suspended || !session.IsRetryable(err) || f.ctx.Err() != nil {
		return notThrough(f.ctx, err)
	}
	return f.settle()
}

// wait returns nil when watch fires (or ends) or the connection's state
// changes (the watches of a lost session are gone, so look again), and
// an error when the wait ends.
func (f *follower) wait(watch <-chan session.Event) error {
	_, changed := f.state()
	select {
	case <-watch:
		return nil
	case <-changed:
		return nil
	case <-f.ctx.Done():
		return notThrough(f.ctx, nil)
	}
}

// abandon is err, after the member's node is removed; a member lost has
// no node to remove (its session's end takes it: the server expired it,
// or the client closed it when it gave it up), and is told at once.
func (m *member) abandon(ctx context.Context, err error) error {
	if errors.Is(err, ErrMemberLost) {
		return err
	}
	return errors.Join(err, m.remove(ctx))
}

// remove deletes the member's node after a failure, even when ctx has
// ended (bounded by DefaultCleanupTimeout): a node left behind would be
// counted by the others as a member that is not there. A node already
// gone is no error; a client closed has ended the session, and the node
// with it.
func (m *member) remove(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultCleanupTimeout)
	defer cancel()
	err := m.c.Delete(dctx, m.path, -1)
	if err == nil || errors.Is(err, session.ErrNoNode) || errors.Is(err, session.ErrClosed) {
		return nil
	}
	return fmt.Errorf("barrier: remove member %s: %w", m.path, err)
}
