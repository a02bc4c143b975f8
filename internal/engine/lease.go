package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// lease is one Lease on a holding: the generic lease (Context, Token,
// Release, ...) with what a ZooKeeper lease adds.
type lease struct {
	hold.Lease
	h *holding
}

var _ znode.Lease = (*lease)(nil)

// Node implements znode.Lease.
func (l *lease) Node() string { return l.h.node }

// SessionID implements znode.Lease.
func (l *lease) SessionID() int64 { return l.h.sess.ID() }

// Revoked implements znode.Lease.
func (l *lease) Revoked() <-chan struct{} {
	if l.h.revoked == nil {
		return nil
	}
	return l.h.revoked.ch
}

// GuardedMulti implements znode.Lease.
func (l *lease) GuardedMulti(ctx context.Context, ops ...session.Op) ([]session.OpResult, error) {
	if l.h.shared {
		// The exclusive lock's node has a fixed path: its existence does not
		// prove it is still ours. Fence with the token instead.
		return nil, fmt.Errorf("%w: GuardedMulti cannot guard a lock whose node path is shared "+
			"(the exclusive lock); write through session.FencedResource with the lease's token", recipes.ErrInvalidArgument)
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("%w: GuardedMulti with no ops", recipes.ErrInvalidArgument)
	}
	if err := l.Err(); err != nil {
		return nil, errors.Join(session.ErrGuardFailed, err)
	}
	guards := append([]string{l.h.node}, l.h.more...)
	all := make([]session.Op, 0, len(guards)+len(ops))
	for _, g := range guards {
		all = append(all, session.CheckOp(g, -1))
	}
	res, err := l.h.conn.Multi(ctx, append(all, ops...)...)
	var me *session.MultiError
	if errors.As(err, &me) && me.Index < len(guards) && errors.Is(me.Err, session.ErrNoNode) {
		return nil, fmt.Errorf("%w: %s: %w", session.ErrGuardFailed, guards[me.Index], me.Err)
	}
	if err != nil {
		return nil, err
	}
	return res[len(guards):], nil
}
