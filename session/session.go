package session

import (
	"context"
	"errors"
	"fmt"
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
}

func newSession(id int64, timeout time.Duration) *Session {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Session{id: id, timeout: timeout, ctx: ctx, cancel: cancel}
}

// ID is the ZooKeeper session id: the ephemeralOwner of the session's
// ephemeral nodes.
func (s *Session) ID() int64 { return s.id }

// Timeout is the session timeout the client asked for.
func (s *Session) Timeout() time.Duration { return s.timeout }

// Context is cancelled when the session ends; context.Cause says why (an
// error that is ErrSuspended, ErrSessionLost or ErrClosed).
func (s *Session) Context() context.Context { return s.ctx }

// Done closes when the session can no longer be trusted.
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// Err is nil while the session is trusted, then why it ended.
func (s *Session) Err() error {
	if s.ctx.Err() == nil {
		return nil
	}
	return context.Cause(s.ctx)
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
