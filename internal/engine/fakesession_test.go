package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/session"
)

// Sessions of the fake: a client's session values, what a test does to its
// connection and session, and the server's side of sessions.

// fakeSession is one session value.
type fakeSession struct {
	id     int64
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	watchers map[session.Watcher]func() bool // their AfterFuncs' stops
}

var _ Session = (*fakeSession)(nil)

func (s *fakeSession) ID() int64                         { return s.id }
func (s *fakeSession) ServerDeadline() (time.Time, bool) { return time.Time{}, false }
func (s *fakeSession) Context() context.Context          { return s.ctx }
func (s *fakeSession) Done() <-chan struct{}             { return s.ctx.Done() }
func (s *fakeSession) Watch(w session.Watcher) bool {
	if s.ctx.Err() != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchers == nil {
		s.watchers = map[session.Watcher]func() bool{}
	}
	s.watchers[w] = context.AfterFunc(s.ctx, func() { w.SessionEnded(context.Cause(s.ctx)) })
	return true
}

func (s *fakeSession) Unwatch(w session.Watcher) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	stop := s.watchers[w]
	delete(s.watchers, w)
	return stop != nil && stop()
}

func (s *fakeSession) Err() error {
	if s.ctx.Err() == nil {
		return nil
	}
	return context.Cause(s.ctx)
}

// ---- what the test does to the connection and the session ----

// SessionID is the current ZooKeeper session.
func (c *fakeConn) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// Disconnect drops the connection: the session value ends (ErrSuspended),
// the session lives on in the server, and requests fail until Reconnect.
func (c *fakeConn) Disconnect() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.connected = false
	c.endLocked(fmt.Errorf("%w: fake: connection lost", session.ErrSuspended))
}

// Reconnect connects again in the same session: a new value, same id.
func (c *fakeConn) Reconnect() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.connectLocked()
}

// Bounce is Disconnect and Reconnect at once: the value ends, and the next
// one (same session) is ready.
func (c *fakeConn) Bounce() {
	c.Disconnect()
	c.Reconnect()
}

// Expire has the server expire the session (its ephemeral nodes go, the
// client's watches end) and connects with a new one.
func (c *fakeConn) Expire() {
	c.mu.Lock()
	old := c.id
	c.connected = false // until the new session
	c.endLocked(fmt.Errorf("%w: fake: session expired", session.ErrSessionLost))
	c.mu.Unlock()
	c.srv.ExpireSession(old)
	c.srv.dropWatches(c, session.ErrSessionExpired)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id = c.srv.newSessionID()
	c.connectLocked()
}

// Renew gives up the session on the client side and connects with a new
// one, while the server still has the old one (its nodes stay until
// fakeServer.ExpireSession): the client has decided the session is lost
// before the server expired it.
func (c *fakeConn) Renew() (old int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old = c.id
	c.endLocked(fmt.Errorf("%w: fake: session given up", session.ErrSessionLost))
	c.id = c.srv.newSessionID()
	c.connectLocked()
	return old
}

func (c *fakeConn) endLocked(cause error) {
	if c.sess != nil {
		c.sess.cancel(cause)
	}
	c.notifyLocked()
}

func (c *fakeConn) connectLocked() {
	c.connected = true
	if c.sess == nil || c.sess.Err() != nil || c.sess.id != c.id {
		if c.sess != nil {
			c.sess.cancel(fmt.Errorf("%w: fake: replaced", session.ErrSuspended))
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		c.sess = &fakeSession{id: c.id, ctx: ctx, cancel: cancel}
	}
	c.notifyLocked()
}

func (c *fakeConn) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// ---- Conn's session methods ----

func (c *fakeConn) Session(ctx context.Context) (Session, error) {
	for {
		c.mu.Lock()
		s, ok, changed := c.sess, c.connected, c.changed
		c.mu.Unlock()
		if ok && s.Err() == nil {
			return s, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("fake: waiting for a session: %w", context.Cause(ctx))
		}
	}
}

func (c *fakeConn) SessionMayLive(id int64) bool {
	c.mu.Lock()
	cur := c.id
	c.mu.Unlock()
	return id == cur && !c.srv.sessionClosed(id)
}

// ---- the server's side ----

// ExpireSession closes session id: its ephemeral nodes are deleted (their
// watches fire). The client that had it is not told (see fakeConn.Expire).
func (s *fakeServer) ExpireSession(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed[id] = true
	for _, p := range slices.Sorted(maps.Keys(s.nodes)) {
		if s.nodes[p].stat.EphemeralOwner == id {
			_ = s.deleteLocked(p, -1)
		}
	}
	s.flushLocked()
}

// dropWatches ends every watch conn set, as go-zookeeper does when its
// session expires (EventNotWatching).
func (s *fakeServer) dropWatches(conn *fakeConn, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, ws := range s.watches {
		kept := ws[:0]
		for _, w := range ws {
			if w.conn != conn {
				kept = append(kept, w)
				continue
			}
			w.ch <- session.Event{Type: session.EventNotWatching, Path: key.path, Err: err}
			close(w.ch)
		}
		s.watches[key] = kept
	}
}

// newSessionID opens a session on the server.
func (s *fakeServer) newSessionID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastID++
	return s.lastID
}

func (s *fakeServer) sessionClosed(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed[id]
}
