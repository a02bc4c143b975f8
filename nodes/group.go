package nodes

import (
	"bytes"
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// GroupMember is Curator's GroupMember: this process's membership of a
// group, the ephemeral node membershipPath/<id> holding its data (a
// Persistent, so it is put back after a session loss or a delete), and
// the group's current members read from a cache of membershipPath's
// children (no request once warm). On session loss this member's node is
// gone until the next session puts it back (see Node's Placement), and
// the view of the others may be stale meanwhile (Cache().Freshness()).
type GroupMember struct {
	path, id string
	node     *Persistent
	view     *cache.Cache
	stop     context.CancelFunc
}

// NewGroupMember joins the group at membershipPath as id, with data, and
// starts its view of the members; it does no I/O on the caller's goroutine
// (Node().WaitForInitialCreate and Cache().Initialized wait). Bad input is
// an ErrInvalidArgument error.
func NewGroupMember(c *session.Client, membershipPath, id string, data []byte) (*GroupMember, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidArgument)
	}
	if err := session.ValidatePath(membershipPath); err != nil {
		return nil, fmt.Errorf("nodes: membership path: %w", err)
	}
	own := session.JoinPath(membershipPath, id)
	if id == "" || session.BaseName(own) != id || session.ValidatePath(own) != nil {
		return nil, fmt.Errorf("%w: member id %q (want one node name)", ErrInvalidArgument, id)
	}
	node, err := NewPersistent(c, own, session.Ephemeral, data)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	view, err := cache.Start(ctx, c, membershipPath, cache.WithDepth(1))
	if err != nil {
		stop()
		_ = node.Close(context.Background())
		return nil, fmt.Errorf("nodes: %w", err)
	}
	return &GroupMember{path: membershipPath, id: id, node: node, view: view, stop: stop}, nil
}

// ID is this member's id.
func (g *GroupMember) ID() string { return g.id }

// Node is this member's node: its Placement says when it is in the group.
func (g *GroupMember) Node() *Persistent { return g.node }

// Cache is the view of the group's members (membershipPath and its
// children), for its events and freshness.
func (g *GroupMember) Cache() *cache.Cache { return g.view }

// Members returns the members by id with their data, as the cache sees
// them, and this member with the data it is kept with (Curator's
// getCurrentMembers), even before its node is made.
func (g *GroupMember) Members() map[string][]byte {
	out := map[string][]byte{}
	for _, n := range g.view.Snapshot() {
		if n.Path != g.path {
			out[session.BaseName(n.Path)] = bytes.Clone(n.Data)
		}
	}
	out[g.id] = g.node.Data()
	return out
}

// SetThisData changes this member's data: see Persistent.SetData.
func (g *GroupMember) SetThisData(ctx context.Context, data []byte) error {
	return g.node.SetData(ctx, data)
}

// Close leaves the group (Persistent.Close deletes the node, retried until
// ctx ends) and stops the view.
func (g *GroupMember) Close(ctx context.Context) error {
	if err := recipes.CheckContext(ctx); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	err := g.node.Close(ctx)
	g.stop()
	_ = g.view.Close() // always nil
	return err
}
