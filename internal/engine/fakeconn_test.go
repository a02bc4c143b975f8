package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
)

// fakeConn is one client of a fakeServer: the engine's Conn. It has one
// ZooKeeper session at a time, seen by the engine as a series of session
// values (fakeSession) that the test ends with Disconnect, Bounce, Expire or
// Renew. While it is disconnected every request fails with
// session.ErrConnectionClosed without reaching the server, and Session waits.
// Every request goes through the interceptors first (see Intercept).
type fakeConn struct {
	srv *fakeServer
	log *slog.Logger

	mu        sync.Mutex
	id        int64        // the ZooKeeper session
	sess      *fakeSession // its current value
	connected bool
	changed   chan struct{} // closed when sess or connected change
	faults    []fakeInterceptor
	calls     map[string]int // requests by op name
}

var _ Conn = (*fakeConn)(nil)

// Conn connects a new client, with a new session.
func (s *fakeServer) Conn() *fakeConn {
	c := &fakeConn{srv: s, log: slog.New(slog.DiscardHandler), changed: make(chan struct{}), calls: map[string]int{}}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id = s.newSessionID()
	c.connectLocked()
	return c
}

// Calls counts the requests of op sent so far (faulted ones included).
func (c *fakeConn) Calls(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[op]
}

// ---- Conn ----

// The op names that interceptors and Calls see.
const (
	fakeOpCreate    = "create"
	fakeOpChildren  = "children"
	fakeOpChildrenW = "childrenw"
	fakeOpGet       = "get"
	fakeOpGetW      = "getw"
	fakeOpDelete    = "delete"
	fakeOpMulti     = "multi"
)

func (c *fakeConn) Logger() *slog.Logger { return c.log }

func (c *fakeConn) Trace() *locktrace.Trace { return nil }

func (c *fakeConn) CreateWithZxid(ctx context.Context, path string, data []byte, mode session.CreateMode, guards ...string) (string, int64, error) {
	var created string
	var czxid int64
	err := c.do(ctx, fakeOpCreate, path, func(s *fakeServer, owner int64) error {
		for _, g := range guards {
			if s.checkLocked(g, -1) != nil {
				return fmt.Errorf("%w: %s: %w", session.ErrGuardFailed, g, session.ErrNoNode)
			}
		}
		s.makeParentsLocked(path)
		var err error
		created, czxid, err = s.createLocked(owner, path, data, mode)
		return err
	})
	if err != nil {
		return "", 0, err
	}
	return created, czxid, nil
}

// CreateAndList is CreateWithZxid, then Children (each through the
// interceptors), as the real client pipelines them.
func (c *fakeConn) CreateAndList(ctx context.Context, path string, data []byte, mode session.CreateMode, parent string) (string, int64, []string, error) {
	created, czxid, err := c.CreateWithZxid(ctx, path, data, mode)
	if err != nil {
		return "", 0, nil, err
	}
	kids, err := c.Children(ctx, parent)
	if err != nil {
		kids = nil // the caller lists
	}
	return created, czxid, kids, nil
}

func (c *fakeConn) Children(ctx context.Context, path string) (kids []string, err error) {
	err = c.do(ctx, fakeOpChildren, path, func(s *fakeServer, _ int64) error {
		if _, ok := s.nodes[path]; !ok {
			return session.ErrNoNode
		}
		kids = s.childrenLocked(path)
		return nil
	})
	return kids, err
}

func (c *fakeConn) ChildrenW(ctx context.Context, path string) (kids []string, ev <-chan session.Event, err error) {
	err = c.do(ctx, fakeOpChildrenW, path, func(s *fakeServer, _ int64) error {
		if _, ok := s.nodes[path]; !ok {
			return session.ErrNoNode
		}
		kids, ev = s.childrenLocked(path), s.watchLocked(c, fakeWatchKey{path, fakeChildWatch})
		return nil
	})
	return kids, ev, err
}

func (c *fakeConn) Get(ctx context.Context, path string) (data []byte, st *session.Stat, err error) {
	err = c.do(ctx, fakeOpGet, path, func(s *fakeServer, _ int64) error {
		n, ok := s.nodes[path]
		if !ok {
			return session.ErrNoNode
		}
		stat := n.stat
		stat.NumChildren = int32(len(s.childrenLocked(path)))
		data, st = n.data, &stat
		return nil
	})
	return data, st, err
}

func (c *fakeConn) GetW(ctx context.Context, path string) (data []byte, ev <-chan session.Event, err error) {
	err = c.do(ctx, fakeOpGetW, path, func(s *fakeServer, _ int64) error {
		n, ok := s.nodes[path]
		if !ok {
			return session.ErrNoNode
		}
		data = append([]byte(nil), n.data...)
		ev = s.watchLocked(c, fakeWatchKey{path, fakeDataWatch})
		return nil
	})
	return data, ev, err
}

func (c *fakeConn) Delete(ctx context.Context, path string, version int32) error {
	return c.do(ctx, fakeOpDelete, path, func(s *fakeServer, _ int64) error {
		return s.deleteLocked(path, version)
	})
}

func (c *fakeConn) Multi(ctx context.Context, ops ...session.Op) ([]session.OpResult, error) {
	path := ""
	if len(ops) > 0 {
		path = fakeViewOp(ops[0]).path
	}
	var res []session.OpResult
	err := c.do(ctx, fakeOpMulti, path, func(s *fakeServer, owner int64) error {
		var err error
		res, err = s.multiLocked(owner, ops)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// do runs one request: counts it, applies the interceptors' fault, and
// applies change to the server (under its lock, all or nothing) in the
// session of the connection. Errors are wrapped as the client does.
func (c *fakeConn) do(ctx context.Context, op, path string, change func(s *fakeServer, owner int64) error) error {
	c.mu.Lock()
	c.calls[op]++
	faults := c.faults
	c.mu.Unlock()
	f := fakeFault{}
	for _, intercept := range faults {
		if f = intercept(op, path); !f.zero() {
			break
		}
	}
	wrap := func(err error) error { return fmt.Errorf("fake: %s %s: %w", op, path, err) }
	if f.Block != nil {
		select {
		case <-f.Block:
		case <-ctx.Done():
			return wrap(ctx.Err())
		}
	}
	if f.Before != nil {
		return wrap(f.Before) // lost on the way, whatever ctx says
	}
	if err := ctx.Err(); err != nil {
		return wrap(err)
	}
	c.mu.Lock()
	owner, connected := c.id, c.connected
	c.mu.Unlock()
	if !connected {
		return wrap(session.ErrConnectionClosed)
	}
	c.srv.mu.Lock()
	err := session.ErrSessionExpired
	if !c.srv.closed[owner] {
		err = c.srv.apply(func() error { return change(c.srv, owner) })
	}
	c.srv.mu.Unlock()
	if err != nil {
		return wrap(err)
	}
	if f.Applied != nil {
		f.Applied()
	}
	if f.After != nil {
		return wrap(f.After)
	}
	return nil
}
