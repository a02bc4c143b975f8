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
	if err := ValidatePath(path); err != nil {
		return false, nil, err
	}
	full := c.cfg.namespace.full(path)
	var (
		ok bool
		st *zk.Stat
	)
	err := c.do(ctx, true, func(conn *zk.Conn) (err error) {
		ok, st, err = conn.Exists(full)
		return err
	})
	if err != nil {
		return false, nil, opError("exists", path, err)
	}
	return ok, st, nil
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

// CreateWithZxid creates path like Create and also returns the zxid of the
// creation: the new node's czxid (a fencing token). It costs the same single
// request as Create: go-zookeeper has no create2, so the zxid is read off the
// reply's header (see zxidTap). When that is not possible (another create of
// the same path on this client at the same time), the node's Stat is read
// on the same connection, and an ephemeral node that is no longer our
// session's is an error. Never retried: use it for sequential nodes in
// protected mode. Missing parents are created as containers.
//
// Guards, if any, are paths that must exist for the create to happen (check
// ops in the same multi); when one is gone the error is ErrGuardFailed.
func (c *Client) CreateWithZxid(ctx context.Context, path string, data []byte, flags int32, guards ...string) (string, int64, error) {
	if err := ValidatePath(path); err != nil {
		return "", 0, err
	}
	for _, g := range guards {
		if err := ValidatePath(g); err != nil {
			return "", 0, err
		}
	}
	full := c.cfg.namespace.full(path)
	size := requestHeaderSize + createBodySize(full, data, c.cfg.acl)
	if len(guards) > 0 {
		size = multiSize(c.guardedCreate(full, data, flags, guards))
	}
	if err := c.checkSize("create", path, size); err != nil {
		return "", 0, err
	}
	var (
		created string
		zxid    int64
	)
	err := c.do(ctx, false, func(conn *zk.Conn) error {
		var err error
		for attempt := 0; ; attempt++ {
			w := c.live.tap.expect(full)
			created, err = c.createGuarded(conn, full, data, flags, guards)
			var seen bool
			zxid, seen = c.live.tap.take(w)
			if err == nil && !seen {
				zxid, err = c.czxidOf(conn, created, flags)
			}
			if !errors.Is(err, zk.ErrNoNode) || errors.Is(err, ErrGuardFailed) || attempt == maxParentAttempts-1 {
				return err
			}
			if perr := c.makeParents(conn, full); perr != nil {
				return perr
			}
		}
	})
	if err != nil {
		return "", 0, opError("create", path, err)
	}
	return c.cfg.namespace.strip(created), zxid, nil
}

// errCreatedGone: the node a create made was gone (or replaced) before its
// czxid could be read; there is nothing of ours left to clean up.
var errCreatedGone = errors.New("created node gone before its czxid was read")

// czxidOf reads the czxid of a node just created on conn (server path),
// when the tap could not. An ephemeral node must still be our session's: a
// node of the same path made by someone else since is not the one we
// created.
func (c *Client) czxidOf(conn *zk.Conn, created string, flags int32) (int64, error) {
	c.live.tap.misses.Add(1)
	_, st, err := conn.Get(created)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return 0, fmt.Errorf("%w: %s", errCreatedGone, created)
	case err != nil:
		return 0, err
	case flags&zk.FlagEphemeral != 0 && st.EphemeralOwner != conn.SessionID():
		return 0, fmt.Errorf("%w: %s belongs to session 0x%x now", errCreatedGone, created, st.EphemeralOwner)
	}
	return st.Czxid, nil
}

// guardedCreate is the multi of the guards' checks and the create of full.
func (c *Client) guardedCreate(full string, data []byte, flags int32, guards []string) []any {
	ops := make([]any, 0, len(guards)+1)
	for _, g := range guards {
		ops = append(ops, &zk.CheckVersionRequest{Path: c.cfg.namespace.full(g), Version: -1})
	}
	return append(ops, &zk.CreateRequest{Path: full, Data: data, Acl: c.cfg.acl, Flags: flags})
}

// createGuarded creates the server path full: a plain create without
// guards, else a multi of the guards' checks and the create.
func (c *Client) createGuarded(conn *zk.Conn, full string, data []byte, flags int32, guards []string) (string, error) {
	if len(guards) == 0 {
		return conn.Create(full, data, flags, c.cfg.acl)
	}
	ops := c.guardedCreate(full, data, flags, guards)
	res, err := conn.Multi(ops...)
	if err == nil && len(res) != len(ops) {
		return "", fmt.Errorf("multi of %d ops answered with %d results", len(ops), len(res))
	}
	if err == nil {
		return res[len(guards)].String, nil
	}
	for i, g := range guards {
		if i < len(res) && errors.Is(res[i].Error, zk.ErrNoNode) {
			return "", fmt.Errorf("%w: %s: %w", ErrGuardFailed, g, res[i].Error)
		}
	}
	if len(res) > len(guards) && res[len(guards)].Error != nil {
		return "", res[len(guards)].Error
	}
	return "", err
}
