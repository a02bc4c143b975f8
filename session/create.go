package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

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
