package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// The operations below take client paths: the namespace is applied on the
// way in and removed from returned paths. Watch events (zk.Event.Path) carry
// server paths. Errors wrap go-zookeeper's (errors.Is(err, zk.ErrNoNode)).

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

// do runs fn on the current connection, honouring ctx, and retries it under
// the client's policy when retry is set. fn must only write variables that
// the caller reads after do returns nil.
func (c *Client) do(ctx context.Context, retryable bool, fn func(*zk.Conn) error) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	once := func() error {
		conn, err := c.connection(ctx)
		if err != nil {
			return err
		}
		if ctx.Done() == nil {
			return fn(conn)
		}
		res := make(chan error, 1)
		go func() { res <- fn(conn) }()
		select {
		case err := <-res:
			return err
		case <-ctx.Done():
			return ctxError(ctx)
		}
	}
	if !retryable || ctx.Value(noRetryKey{}) != nil {
		return once()
	}
	return retry(ctx, c.cfg.retry, once)
}

func opError(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("session: %s %s: %w", op, path, err)
}

// Create creates path with data and zk flags (zk.FlagEphemeral,
// zk.FlagSequence, ...), creating missing parents as container nodes, and
// returns the created path. It is retried under the RetryPolicy unless it is
// sequential (a retry could create a second node).
func (c *Client) Create(ctx context.Context, path string, data []byte, flags int32) (string, error) {
	if err := ValidatePath(path); err != nil {
		return "", err
	}
	full := c.cfg.namespace.full(path)
	if err := c.checkSize("create", path, requestHeaderSize+createBodySize(full, data, c.cfg.acl)); err != nil {
		return "", err
	}
	var created string
	err := c.do(ctx, flags&zk.FlagSequence == 0, func(conn *zk.Conn) error {
		var err error
		for attempt := 0; attempt < maxParentAttempts; attempt++ {
			created, err = conn.Create(full, data, flags, c.cfg.acl)
			if !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			if perr := c.makeParents(conn, full); perr != nil {
				return perr
			}
		}
		return err
	})
	if err != nil {
		return "", opError("create", path, err)
	}
	return c.cfg.namespace.strip(created), nil
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
func (c *Client) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	data, st, _, err := c.get(ctx, path, false)
	return data, st, err
}

// GetW is Get that also sets a watch on path. When the node does not exist
// it returns zk.ErrNoNode and leaves no watch behind.
func (c *Client) GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	return c.get(ctx, path, true)
}

func (c *Client) get(ctx context.Context, path string, watch bool) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if err := ValidatePath(path); err != nil {
		return nil, nil, nil, err
	}
	full := c.cfg.namespace.full(path)
	var (
		data []byte
		st   *zk.Stat
		ev   <-chan zk.Event
	)
	err := c.do(ctx, true, func(conn *zk.Conn) (err error) {
		if watch {
			data, st, ev, err = conn.GetW(full)
		} else {
			data, st, err = conn.Get(full)
		}
		return err
	})
	if err != nil {
		return nil, nil, nil, opError("get", path, err)
	}
	return data, st, ev, nil
}

// Children returns the names of path's children (unsorted) and its Stat.
func (c *Client) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	kids, st, _, err := c.children(ctx, path, false)
	return kids, st, err
}

// ChildrenW is Children that also sets a watch on path's children.
func (c *Client) ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	return c.children(ctx, path, true)
}

func (c *Client) children(ctx context.Context, path string, watch bool) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if err := ValidatePath(path); err != nil {
		return nil, nil, nil, err
	}
	full := c.cfg.namespace.full(path)
	var (
		kids []string
		st   *zk.Stat
		ev   <-chan zk.Event
	)
	err := c.do(ctx, true, func(conn *zk.Conn) (err error) {
		if watch {
			kids, st, ev, err = conn.ChildrenW(full)
		} else {
			kids, st, err = conn.Children(full)
		}
		return err
	})
	if err != nil {
		return nil, nil, nil, opError("children", path, err)
	}
	return kids, st, ev, nil
}

// Exists reports whether path exists, with its Stat when it does.
func (c *Client) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	ok, st, _, err := c.exists(ctx, path, false)
	return ok, st, err
}

// ExistsW is Exists that also leaves a watch on path, which fires when it
// is created, deleted or changed.
func (c *Client) ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	return c.exists(ctx, path, true)
}

func (c *Client) exists(ctx context.Context, path string, watch bool) (bool, *zk.Stat, <-chan zk.Event, error) {
	if err := ValidatePath(path); err != nil {
		return false, nil, nil, err
	}
	full := c.cfg.namespace.full(path)
	var (
		ok bool
		st *zk.Stat
		ev <-chan zk.Event
	)
	err := c.do(ctx, true, func(conn *zk.Conn) (err error) {
		if watch {
			ok, st, ev, err = conn.ExistsW(full)
		} else {
			ok, st, err = conn.Exists(full)
		}
		return err
	})
	if err != nil {
		return false, nil, nil, opError("exists", path, err)
	}
	return ok, st, ev, nil
}

// Set writes data to path if its version matches (-1: any version).
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	full := c.cfg.namespace.full(path)
	if err := c.checkSize("set", path, requestHeaderSize+stringSize(full)+bufferSize(data)+4); err != nil {
		return nil, err
	}
	var st *zk.Stat
	err := c.do(ctx, true, func(conn *zk.Conn) (err error) {
		st, err = conn.Set(full, data, version)
		return err
	})
	if err != nil {
		return nil, opError("set", path, err)
	}
	return st, nil
}

// Delete deletes path if its version matches (-1: any version).
func (c *Client) Delete(ctx context.Context, path string, version int32) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	full := c.cfg.namespace.full(path)
	err := c.do(ctx, true, func(conn *zk.Conn) error {
		return conn.Delete(full, version)
	})
	return opError("delete", path, err)
}
