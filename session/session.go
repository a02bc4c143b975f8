package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Session is one ZooKeeper session as the client trusts it. Its Done channel
// closes, and Err says why, when the session can no longer be trusted (see
// ErrorPolicy); a later session, even one with the same ID after a
// suspension under the default policy, is another Session value.
type Session struct {
	id      int64
	timeout time.Duration
	ctx     context.Context
	cancel  context.CancelCauseFunc

	live   *liveness // the client's, for the trust rule; nil in unit tests
	policy ErrorPolicy

	watchMu  sync.Mutex
	watchers map[Watcher]struct{}
	ended    bool // the watchers have been told
}

func newSession(id int64, timeout time.Duration) *Session {
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &Session{id: id, timeout: timeout, ctx: ctx, cancel: cancel}
	context.AfterFunc(ctx, s.tellWatchers)
	return s
}

// Watcher is told when a session value ends: see Session.Watch.
type Watcher interface {
	// SessionEnded is called once, with the cause of the end (as
	// context.Cause of the session's Context).
	SessionEnded(cause error)
}

// Watch arranges for w.SessionEnded to be called, on a goroutine of the
// session value's own, when the value ends, unless Unwatch removes w
// first. It returns false, and does nothing, when the value has ended
// already. It is context.AfterFunc on Context for the many short-lived
// watchers of a busy client (every lock held): it costs no allocation. The
// watchers of one value are told one after the other.
func (s *Session) Watch(w Watcher) bool {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.ended {
		return false
	}
	if s.watchers == nil {
		s.watchers = make(map[Watcher]struct{})
	}
	s.watchers[w] = struct{}{}
	return true
}

// Unwatch removes w; it returns false when w was not watching (never, or
// it has been told already, or is being told).
func (s *Session) Unwatch(w Watcher) bool {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if _, ok := s.watchers[w]; !ok {
		return false
	}
	delete(s.watchers, w)
	return true
}

// tellWatchers tells every watcher that the value ended.
func (s *Session) tellWatchers() {
	s.watchMu.Lock()
	s.ended = true
	ws := s.watchers
	s.watchers = nil
	s.watchMu.Unlock()
	cause := context.Cause(s.ctx)
	for w := range ws {
		w.SessionEnded(cause)
	}
}

// newSessionLocked starts the value of session id, trusted under the
// client's rule (see liveness.go).
func (c *Client) newSessionLocked(id int64) *Session {
	if err := c.live.tickError(c.live.timeout(c.cfg.sessionTimeout)); err != nil && c.sess != nil {
		c.log.Error("zookeeper session", "session", fmt.Sprintf("0x%x", id), "err", err)
	}
	s := newSession(id, c.live.timeout(c.cfg.sessionTimeout))
	s.live, s.policy = &c.live, c.cfg.policy
	return s
}

// ID is the ZooKeeper session id: the ephemeralOwner of the session's
// ephemeral nodes.
func (s *Session) ID() int64 { return s.id }

// Timeout is the session timeout the server granted when the session was
// established: the one asked for (WithSessionTimeout) clamped to the
// server's minSessionTimeout..maxSessionTimeout, as Client.SessionTimeout
// gives it.
func (s *Session) Timeout() time.Duration { return s.timeout }

// ServerDeadline is when the server may expire the session at the
// earliest, as the client knows it: the send time of the latest request
// the ensemble's leader is proven to have heard, plus the session timeout.
// false when no reply is known (or the client has moved on to another
// session).
func (s *Session) ServerDeadline() (time.Time, bool) {
	if s.live == nil {
		return time.Time{}, false
	}
	return s.live.expiresAt(s.id)
}

// Context is cancelled when the session ends; context.Cause says why (an
// error that is ErrSuspended, ErrSessionLost or ErrClosed).
func (s *Session) Context() context.Context { return s.ctx }

// Done closes when the session can no longer be trusted.
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// Err is nil while the session is trusted, then why it ended. It reads the
// clock: it reports the end of the trust at its deadline, even before the
// client's timer has cancelled Context.
func (s *Session) Err() error {
	if s.ctx.Err() != nil {
		return context.Cause(s.ctx)
	}
	if s.live == nil {
		return nil // a value made in a unit test: trusted until cancelled
	}
	if until, ok := s.TrustedUntil(); !ok || !time.Now().Before(until) {
		return s.untrusted()
	}
	return nil
}

// TrustedUntil is the time until which the session may be trusted, as of
// now. With H the send time of the latest request of the session that the
// server answered, and L that of the latest the ensemble's leader is
// proven to have heard (see the package doc), it is the earlier of H + 2/3
// and L + 3/4 of the session timeout (SuspendedIsLost), or L plus the
// session timeout less recipes.DriftMargin (OnlyLostIsLost). It moves
// later as replies come. The session value ends (Done closes) at that time
// at the latest; it may end sooner (a dropped connection under the default
// policy). ok is false when no reply of the session is known.
func (s *Session) TrustedUntil() (until time.Time, ok bool) {
	if s.live == nil {
		return time.Time{}, false
	}
	heard, proven, ok := s.live.lastHeard(s.id)
	if !ok {
		return time.Time{}, false
	}
	return epoch.Add(trustedUntil(s.policy, s.live.timeout(s.timeout), heard, proven)), true
}

// untrusted is the cause of a session value's end at its trust deadline.
func (s *Session) untrusted() error {
	if s.policy == OnlyLostIsLost {
		return fmt.Errorf("%w: no proof that the ensemble's leader heard the session within the session timeout "+
			"(less the drift margin); the server may expire the session", ErrSessionLost)
	}
	return fmt.Errorf("%w: no reply from the server within 2/3 of the session timeout, "+
		"or no proof that the ensemble's leader heard the session within 3/4 of it", ErrSuspended)
}

func (s *Session) String() string { return fmt.Sprintf("session 0x%x", s.id) }

// Session waits until the client has a trusted session and returns it. It
// returns ErrClosed after Close, and ctx's error when ctx ends first.
func (c *Client) Session(ctx context.Context) (*Session, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	for {
		c.mu.Lock()
		closed, s, changed := c.closed, c.sess, c.changed
		c.mu.Unlock()
		switch {
		case closed:
			return nil, ErrClosed
		case s != nil && s.Err() == nil:
			return s, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctxError(ctx)
		}
	}
}

// CurrentSession returns the latest session value without waiting; it may
// already be ended (check Err), and is nil before the first session.
func (c *Client) CurrentSession() *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}

// checkCtx refuses a nil or finished context.
func checkCtx(ctx context.Context) error {
	if ctx == nil {
		return invalid("nil context")
	}
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	return nil
}

// ctxError is an error that is both ctx.Err() and context.Cause(ctx).
func ctxError(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if errors.Is(cause, err) {
		return cause
	}
	return fmt.Errorf("%w: %w", err, cause)
}
