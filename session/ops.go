package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// The operations below take client paths: the namespace is applied on the
// way in and removed from returned paths and from watch events. Errors wrap
// ZooKeeper's (errors.Is(err, ErrNoNode)). go-zookeeper's types stop here:
// Stat, Event, ACL and CreateMode are converted at this edge.

// conn waits for the current connection.
func (c *Client) connection(ctx context.Context) (*zk.Conn, error) {
	for {
		c.mu.Lock()
		closed, conn, ready := c.closed, c.conn, c.connReady
		c.mu.Unlock()
		switch {
		case closed:
			return nil, ErrClosed
		case conn != nil:
			return conn, nil
		}
		select {
		case <-ready:
		case <-c.done:
		case <-ctx.Done():
			return nil, ctxError(ctx)
		}
	}
}

// call runs fn on the current connection and returns its result, honouring
// ctx, and retries it under the client's policy when retryable is set
// (unless ctx says WithoutRetry). It first waits for the client's
// abandoned calls (callOrder). When nothing can cancel ctx, fn runs on
// the caller's goroutine; otherwise on its own, abandoned if ctx ends
// first. Results come back by value: an operation costs no allocation of
// its own beyond fn and, when ctx can end, its goroutine and two channels.
// A refusal (zk.ErrNoAuth, zk.ErrAuthFailed) is marked so that it is
// recipes.ErrRefused too.
func call[T any](c *Client, ctx context.Context, retryable bool, fn func(*zk.Conn) (T, error)) (T, error) {
	v, err := callRetrying(c, ctx, retryable, fn)
	return v, markRefusal(err)
}

// callRetrying is call, without the mark.
func callRetrying[T any](c *Client, ctx context.Context, retryable bool, fn func(*zk.Conn) (T, error)) (T, error) {
	if err := checkCtx(ctx); err != nil {
		var zero T
		return zero, err
	}
	if !retryable || ctx.Value(noRetryKey{}) != nil {
		return callOnce(c, ctx, fn)
	}
	start := time.Now()
	for attempt := 0; ; attempt++ {
		v, err := callOnce(c, ctx, fn)
		if !IsRetryable(err) {
			return v, err
		}
		if err := backoff(ctx, c.done, c.cfg.retry, attempt, start, err); err != nil {
			return v, err
		}
	}
}

// callOnce is one try of call.
func callOnce[T any](c *Client, ctx context.Context, fn func(*zk.Conn) (T, error)) (T, error) {
	var zero T
	if err := c.order.wait(ctx, c.done); err != nil {
		return zero, err
	}
	conn, err := c.connection(ctx)
	if err != nil {
		return zero, err
	}
	if ctx.Done() == nil {
		return fn(conn)
	}
	type result struct {
		v   T
		err error
	}
	res := make(chan result, 1)
	done := make(chan struct{}) // closed once fn has returned: what an abandoned call orders
	go func() {
		v, err := fn(conn)
		close(done)
		res <- result{v, err}
	}()
	select {
	case r := <-res:
		return r.v, r.err
	case <-ctx.Done():
		c.order.abandon(done)
		return zero, ctxError(ctx)
	}
}

// do is call for an operation whose only result is its error. fn must only
// write variables that the caller reads after do returns nil.
func (c *Client) do(ctx context.Context, retryable bool, fn func(*zk.Conn) error) error {
	_, err := call(c, ctx, retryable, func(conn *zk.Conn) (struct{}, error) { return struct{}{}, fn(conn) })
	return err
}

// nodeData is what a read of a node returns.
type nodeData struct {
	data []byte
	st   *zk.Stat
	ev   <-chan Event
	ok   bool // exists: the node exists
}

// listing is what a read of a node's children returns.
type listing struct {
	kids []string
	st   *zk.Stat
	ev   <-chan Event
}

// watchMode is whether a read leaves a watch, and how its event comes.
type watchMode uint8

const (
	noWatch    watchMode = iota
	watchNotes           // on Notifications only
	watchChan            // also on a channel of its own (the watch table)
)

func opError(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("session: %s %s: %w", op, path, err)
}

// Create creates path with data as a node of the given mode, creating
// missing parents as container nodes, and returns the created path. It is
// retried under the RetryPolicy unless it is sequential (a retry could
// create a second node). A TTL mode is made by CreateTTL.
func (c *Client) Create(ctx context.Context, path string, data []byte, mode CreateMode) (string, error) {
	if mode.HasTTL() {
		return "", invalid("create %s: mode %v takes a TTL: use CreateTTL", path, mode)
	}
	return c.create(ctx, path, data, mode, 0)
}

// create is Create and CreateTTL: ttl is used by the TTL modes only.
func (c *Client) create(ctx context.Context, path string, data []byte, mode CreateMode, ttl time.Duration) (string, error) {
	if err := ValidatePath(path); err != nil {
		return "", err
	}
	send, err := c.creator(mode, ttl)
	if err != nil {
		return "", err
	}
	full := c.cfg.namespace.full(path)
	if err := c.checkSize("create", path, requestHeaderSize+createBodySize(full, data, c.cfg.acl)); err != nil {
		return "", err
	}
	var created string
	err = c.do(ctx, !mode.IsSequential(), func(conn *zk.Conn) error {
		var err error
		for attempt := 0; attempt < maxParentAttempts; attempt++ {
			created, err = send(conn, full, data)
			if !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			if perr := c.makeParents(conn, full); perr != nil {
				return perr
			}
		}
		return err
	})
	if code, ok := serverErrorCode(err); ok && code == codeUnimplemented && mode.HasTTL() {
		err = fmt.Errorf("%w: %w", ErrTTLDisabled, err)
	}
	if err != nil {
		return "", opError("create", path, err)
	}
	return c.cfg.namespace.strip(created), nil
}

// creator returns the request that makes a node of mode: a container and
// a TTL node have requests of their own.
func (c *Client) creator(mode CreateMode, ttl time.Duration) (func(conn *zk.Conn, full string, data []byte) (string, error), error) {
	switch {
	case mode == Container:
		return func(conn *zk.Conn, full string, data []byte) (string, error) {
			return conn.CreateContainer(full, data, zk.FlagContainer, c.cfg.acl)
		}, nil
	case mode.HasTTL():
		return func(conn *zk.Conn, full string, data []byte) (string, error) {
			return conn.CreateTTL(full, data, int32(mode), c.cfg.acl, ttl)
		}, nil
	}
	flags, err := mode.flags()
	if err != nil {
		return nil, err
	}
	return func(conn *zk.Conn, full string, data []byte) (string, error) {
		return conn.Create(full, data, flags, c.cfg.acl)
	}, nil
}

// EnsurePath creates path and its missing ancestors as container nodes (a
// no-op for those that exist).
func (c *Client) EnsurePath(ctx context.Context, path string) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	full := c.cfg.namespace.full(path)
	err := c.do(ctx, true, func(conn *zk.Conn) error {
		if err := c.makeParents(conn, full); err != nil {
			return err
		}
		return c.makeContainer(conn, full)
	})
	return opError("ensure", path, err)
}

// makeParents creates the missing ancestors of a server path, top down.
func (c *Client) makeParents(conn *zk.Conn, full string) error {
	var err error
	for attempt := 0; attempt < maxParentAttempts; attempt++ {
		if err = c.makeAncestors(conn, full); !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		// An empty container above was reaped by the server meanwhile:
		// start again from the top.
	}
	return err
}

// maxParentAttempts bounds the restarts of makeParents and of the creates
// that use it, when the server reaps empty container parents meanwhile.
const maxParentAttempts = 5

func (c *Client) makeAncestors(conn *zk.Conn, full string) error {
	for i := 1; i < len(full); i++ {
		if full[i] == '/' {
			if err := c.makeContainer(conn, full[:i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// makeContainer creates a container node, falling back to a persistent one
// on servers without containers (before 3.5).
func (c *Client) makeContainer(conn *zk.Conn, full string) error {
	_, err := conn.CreateContainer(full, nil, zk.FlagContainer, c.cfg.acl)
	if code, ok := serverErrorCode(err); ok && code == codeUnimplemented {
		_, err = conn.Create(full, nil, zk.FlagPersistent, c.cfg.acl)
	}
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

// Get returns the data and Stat of path.
func (c *Client) Get(ctx context.Context, path string) ([]byte, *Stat, error) {
	data, st, _, err := c.get(ctx, path, noWatch)
	return data, st, err
}

// GetW is Get that also sets a watch on path. When the node does not exist
// it returns ErrNoNode and leaves no watch behind.
// The watch's channel delivers one Event, or is closed without one when
// ctx ends (pass a context that lasts as long as you wait on it) or the
// connection closes. An Event says that something may have changed, not
// what: read again. After a reconnection, a watch set by a read that was
// queued while the connection was down may fire once for a change that
// read already saw (go-zookeeper sends queued requests before it re-sets
// the older watches, and a notification carries no zxid to tell them
// apart); ChildrenW and ExistsW alike.
func (c *Client) GetW(ctx context.Context, path string) ([]byte, *Stat, <-chan Event, error) {
	return c.get(ctx, path, watchChan)
}

// get reads path, with a watch as mode says; the watch's channel is
// returned under watchChan.
func (c *Client) get(ctx context.Context, path string, mode watchMode) ([]byte, *Stat, <-chan Event, error) {
	if err := ValidatePath(path); err != nil {
		return nil, nil, nil, err
	}
	full := c.cfg.namespace.full(path)
	r, err := call(c, ctx, true, func(conn *zk.Conn) (r nodeData, err error) {
		switch mode {
		case noWatch:
			r.data, r.st, err = conn.Get(full)
		case watchNotes:
			r.data, r.st, _, err = conn.GetW(full)
		default:
			r.ev = c.readWatched(ctx, conn, full, func() (zch <-chan zk.Event, _ watchKind) {
				r.data, r.st, zch, err = conn.GetW(full)
				return zch, kindData
			})
		}
		return r, err
	})
	if err != nil {
		return nil, nil, nil, opError("get", path, err)
	}
	return r.data, statOf(r.st), r.ev, nil
}

// Children returns the names of path's children (unsorted) and its Stat.
func (c *Client) Children(ctx context.Context, path string) ([]string, *Stat, error) {
	kids, st, _, err := c.children(ctx, path, noWatch)
	return kids, st, err
}

// ChildrenW is Children that also sets a watch on path's children.
// The watch's channel delivers one Event, or is closed without one when
// ctx ends (pass a context that lasts as long as you wait on it) or the
// connection closes.
func (c *Client) ChildrenW(ctx context.Context, path string) ([]string, *Stat, <-chan Event, error) {
	return c.children(ctx, path, watchChan)
}

func (c *Client) children(ctx context.Context, path string, mode watchMode) ([]string, *Stat, <-chan Event, error) {
	if err := ValidatePath(path); err != nil {
		return nil, nil, nil, err
	}
	full := c.cfg.namespace.full(path)
	r, err := call(c, ctx, true, func(conn *zk.Conn) (r listing, err error) {
		switch mode {
		case noWatch:
			r.kids, r.st, err = conn.Children(full)
		case watchNotes:
			r.kids, r.st, _, err = conn.ChildrenW(full)
		default:
			r.ev = c.readWatched(ctx, conn, full, func() (zch <-chan zk.Event, _ watchKind) {
				r.kids, r.st, zch, err = conn.ChildrenW(full)
				return zch, kindChild
			})
		}
		return r, err
	})
	if err != nil {
		return nil, nil, nil, opError("children", path, err)
	}
	return r.kids, statOf(r.st), r.ev, nil
}

// Exists reports whether path exists, with its Stat when it does.
func (c *Client) Exists(ctx context.Context, path string) (bool, *Stat, error) {
	ok, st, _, err := c.exists(ctx, path, noWatch)
	return ok, st, err
}

// ExistsW is Exists that also leaves a watch on path, which fires when it
// is created, deleted or changed.
// The watch's channel delivers one Event, or is closed without one when
// ctx ends (pass a context that lasts as long as you wait on it) or the
// connection closes.
func (c *Client) ExistsW(ctx context.Context, path string) (bool, *Stat, <-chan Event, error) {
	return c.exists(ctx, path, watchChan)
}

func (c *Client) exists(ctx context.Context, path string, mode watchMode) (bool, *Stat, <-chan Event, error) {
	if err := ValidatePath(path); err != nil {
		return false, nil, nil, err
	}
	full := c.cfg.namespace.full(path)
	r, err := call(c, ctx, true, func(conn *zk.Conn) (r nodeData, err error) {
		switch mode {
		case noWatch:
			r.ok, r.st, err = conn.Exists(full)
		case watchNotes:
			r.ok, r.st, _, err = conn.ExistsW(full)
		default:
			r.ev = c.readWatched(ctx, conn, full, func() (zch <-chan zk.Event, _ watchKind) {
				r.ok, r.st, zch, err = conn.ExistsW(full)
				if !r.ok {
					return zch, kindExist // go-zookeeper: an exists watch on a node that is not there
				}
				return zch, kindData
			})
		}
		return r, err
	})
	if err != nil {
		return false, nil, nil, opError("exists", path, err)
	}
	return r.ok, statOf(r.st), r.ev, nil
}

// Set writes data to path if its version matches (-1: any version).
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (*Stat, error) {
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	full := c.cfg.namespace.full(path)
	if err := c.checkSize("set", path, requestHeaderSize+stringSize(full)+bufferSize(data)+4); err != nil {
		return nil, err
	}
	st, err := call(c, ctx, true, func(conn *zk.Conn) (*zk.Stat, error) {
		return conn.Set(full, data, version)
	})
	if err != nil {
		return nil, opError("set", path, err)
	}
	return statOf(st), nil
}

// Delete deletes path if its version matches (-1: any version).
func (c *Client) Delete(ctx context.Context, path string, version int32) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	full := c.cfg.namespace.full(path)
	_, err := call(c, ctx, true, func(conn *zk.Conn) (struct{}, error) {
		return struct{}{}, conn.Delete(full, version)
	})
	return opError("delete", path, err)
}
