package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
)

// Session is one trusted session value (a *session.Session).
type Session interface {
	ID() int64
	// Err is nil while the session is trusted; it reads the clock.
	Err() error
	Context() context.Context
	Done() <-chan struct{}
	// Watch has w told when the value ends, unless Unwatch comes first;
	// false when it has ended already (session.Session.Watch).
	Watch(w session.Watcher) bool
	Unwatch(w session.Watcher) bool
	// ServerDeadline is when the server may expire the session at the
	// earliest, as the client knows it (session.Session.ServerDeadline).
	ServerDeadline() (time.Time, bool)
}

// Conn is the ZooKeeper operations the engine uses. Paths are the client's
// (the namespace is applied below). Errors wrap go-zookeeper's
// (errors.Is(err, session.ErrNoNode)); a retryable one (session.IsRetryable)
// means the request may or may not have been applied.
type Conn interface {
	// Session waits for a trusted session.
	Session(ctx context.Context) (Session, error)
	// SessionMayLive reports whether session id may still own ephemeral
	// nodes this client could delete.
	SessionMayLive(id int64) bool
	// CreateWithZxid creates path and returns the created path and its
	// czxid; guards are paths that must exist for the create to happen
	// (session.ErrGuardFailed otherwise). Never retried.
	CreateWithZxid(ctx context.Context, path string, data []byte, mode session.CreateMode, guards ...string) (string, int64, error)
	// CreateAndList is CreateWithZxid (no guards) with a listing of parent
	// pipelined right behind it: one round trip, and the listing holds the
	// new node. children is nil when no listing could be had.
	CreateAndList(ctx context.Context, path string, data []byte, mode session.CreateMode, parent string) (created string, czxid int64, children []string, err error)
	Children(ctx context.Context, path string) ([]string, error)
	// ChildrenW also leaves a watch on path's children.
	ChildrenW(ctx context.Context, path string) ([]string, <-chan session.Event, error)
	Get(ctx context.Context, path string) ([]byte, *session.Stat, error)
	// GetW also leaves a watch on path; when path does not exist it
	// returns session.ErrNoNode and leaves no watch behind.
	GetW(ctx context.Context, path string) ([]byte, <-chan session.Event, error)
	Delete(ctx context.Context, path string, version int32) error
	// Multi applies ops atomically: all or none.
	Multi(ctx context.Context, ops ...session.Op) ([]session.OpResult, error)
	Logger() *slog.Logger
	// Trace is the client's trace (session.WithTrace), nil when none.
	Trace() *locktrace.Trace
}

// Client is the Conn of a session client.
func Client(c *session.Client) Conn { return clientConn{c} }

type clientConn struct{ c *session.Client }

func (a clientConn) Session(ctx context.Context) (Session, error) {
	s, err := a.c.Session(ctx)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return s, nil
}

func (a clientConn) SessionMayLive(id int64) bool {
	cur, st := a.c.CurrentSession(), a.c.State()
	return cur != nil && cur.ID() == id && st != session.Lost && st != session.Closed
}

func (a clientConn) CreateWithZxid(ctx context.Context, path string, data []byte, mode session.CreateMode, guards ...string) (string, int64, error) {
	return a.c.CreateWithZxid(ctx, path, data, mode, guards...)
}

func (a clientConn) CreateAndList(ctx context.Context, path string, data []byte, mode session.CreateMode, parent string) (string, int64, []string, error) {
	return a.c.CreateAndList(ctx, path, data, mode, parent)
}

func (a clientConn) Children(ctx context.Context, path string) ([]string, error) {
	kids, _, err := a.c.Children(ctx, path)
	return kids, err
}

func (a clientConn) ChildrenW(ctx context.Context, path string) ([]string, <-chan session.Event, error) {
	kids, _, ev, err := a.c.ChildrenW(ctx, path)
	return kids, ev, err
}

func (a clientConn) Get(ctx context.Context, path string) ([]byte, *session.Stat, error) {
	return a.c.Get(ctx, path)
}

func (a clientConn) GetW(ctx context.Context, path string) ([]byte, <-chan session.Event, error) {
	data, _, ev, err := a.c.GetW(ctx, path)
	return data, ev, err
}

func (a clientConn) Delete(ctx context.Context, path string, version int32) error {
	return a.c.Delete(ctx, path, version)
}

func (a clientConn) Multi(ctx context.Context, ops ...session.Op) ([]session.OpResult, error) {
	return a.c.Multi(ctx, ops...)
}

func (a clientConn) Logger() *slog.Logger { return a.c.Logger() }

func (a clientConn) Trace() *locktrace.Trace { return a.c.Trace() }
