package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// CreateWithZxid creates path like Create and also returns the new node's
// czxid, the zxid of its creation. A czxid only grows across the whole
// ensemble, so it serves as a fencing token: a recipe of your own that
// takes a lock or a lease by creating a node (as this module's locks do)
// can hand the czxid to the resources it guards (FencedResource). It costs
// the single request Create costs, where Create followed by Get costs two:
// go-zookeeper has no create2 (a create that returns the Stat), so the
// zxid is read off the header of the create's reply. When this client
// creates the same path from two goroutines at once, that reply cannot be
// told apart, and the node's Stat is read on the same connection instead;
// an ephemeral node that is no longer our session's is then an error.
//
// It is never retried, even on a connection loss that may or may not have
// applied the create (IsRetryable): the caller decides, as for a
// sequential node, where a blind retry could make a second node. Missing
// parents are created as containers. Guards, if any, are paths that must
// exist for the create to happen (check ops in the same multi); when one
// is gone the error is ErrGuardFailed and nothing is created.
func (c *Client) CreateWithZxid(ctx context.Context, path string, data []byte, mode CreateMode, guards ...string) (string, int64, error) {
	if err := ValidatePath(path); err != nil {
		return "", 0, err
	}
	flags, err := mode.flags()
	if err != nil {
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
	r, err := call(c, ctx, false, func(conn *zk.Conn) (r madeNode, err error) {
		r.path, r.czxid, err = c.createZxid(conn, full, data, flags, guards)
		return r, err
	})
	if err != nil {
		return "", 0, opError("create", path, err)
	}
	return c.cfg.namespace.strip(r.path), r.czxid, nil
}

// createZxid is CreateWithZxid on conn, with server paths.
func (c *Client) createZxid(conn *zk.Conn, full string, data []byte, flags int32, guards []string) (string, int64, error) {
	for attempt := 0; ; attempt++ {
		w := c.live.tap.expect(full)
		created, err := c.createGuarded(conn, full, data, flags, guards)
		zxid, seen := c.live.tap.take(w)
		if err == nil && !seen {
			zxid, err = c.czxidOf(conn, created, flags)
		}
		if !errors.Is(err, ErrNoNode) || errors.Is(err, ErrGuardFailed) || attempt == maxParentAttempts-1 {
			return created, zxid, err
		}
		if perr := c.makeParents(conn, full); perr != nil {
			return "", 0, perr
		}
	}
}

// CreateAndList creates path like CreateWithZxid (without guards) and lists
// the children of parent in the same round trip, for a queue recipe of your
// own (a lock, a latch, a queue of items) that must find its new node among
// its siblings: one round trip instead of two. The listing is sent right
// behind the create, without waiting for its reply; ZooKeeper runs one
// session's requests in order, so the listing is taken after the create
// and holds the new node. children is nil when no listing could be had
// (then list parent yourself); when the listing cannot be sent right
// behind (the same path created from two goroutines at once, a missing
// parent), it is made after the create. Never retried, as CreateWithZxid.
func (c *Client) CreateAndList(ctx context.Context, path string, data []byte, mode CreateMode,
	parent string) (created string, czxid int64, children []string, err error) {
	if err := ValidatePath(path); err != nil {
		return "", 0, nil, err
	}
	flags, err := mode.flags()
	if err != nil {
		return "", 0, nil, err
	}
	if err := ValidatePath(parent); err != nil {
		return "", 0, nil, err
	}
	full, pfull := c.cfg.namespace.full(path), c.cfg.namespace.full(parent)
	if err := c.checkSize("create", path, requestHeaderSize+createBodySize(full, data, c.cfg.acl)); err != nil {
		return "", 0, nil, err
	}
	r, err := call(c, ctx, false, func(conn *zk.Conn) (madeNode, error) {
		return c.createAndList(conn, full, data, flags, pfull)
	})
	if err != nil {
		return "", 0, nil, opError("create", path, err)
	}
	return c.cfg.namespace.strip(r.path), r.czxid, r.children, nil
}

// madeNode is a created node: its server path, czxid and, for
// CreateAndList, the listing of its parent (nil when none could be had).
type madeNode struct {
	path     string
	czxid    int64
	children []string
	err      error // of the create, on createAndList's goroutine
}

// createAndList is CreateAndList on conn, with server paths.
func (c *Client) createAndList(conn *zk.Conn, full string, data []byte, flags int32, pfull string) (madeNode, error) {
	w := c.live.tap.expect(full)
	res := make(chan madeNode) // always received, once: unbuffered costs less
	go func() {
		created, err := conn.Create(full, data, flags, c.cfg.acl)
		res <- madeNode{path: created, err: err}
	}()
	var (
		r       madeNode
		got     bool
		listed  bool
		listErr error
	)
	if w != nil {
		select {
		case <-w.out: // the create is on the wire: the listing goes right behind it
			r.children, _, listErr = conn.Children(pfull)
			listed = true
		case r = <-res: // failed before it went out
			got = true
		}
	}
	if !got {
		kids := r.children
		r = <-res
		r.children = kids
	}
	zxid, seen := c.live.tap.take(w)
	switch {
	case errors.Is(r.err, zk.ErrNoNode): // a missing parent: make it, then create and list one after the other
		if err := c.makeParents(conn, full); err != nil {
			return madeNode{}, err
		}
		created, zxid, err := c.createZxid(conn, full, data, flags, nil)
		if err != nil {
			return madeNode{}, err
		}
		kids, _, listErr := conn.Children(pfull)
		if listErr != nil {
			kids = nil
		}
		return madeNode{path: created, czxid: zxid, children: kids}, nil
	case r.err != nil:
		return madeNode{}, r.err
	case !seen:
		var err error
		if zxid, err = c.czxidOf(conn, r.path, flags); err != nil {
			return madeNode{}, err
		}
	}
	if !listed {
		r.children, _, listErr = conn.Children(pfull)
	}
	if listErr != nil {
		r.children = nil // the caller lists
	}
	r.czxid = zxid
	return r, nil
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
