package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/znode"
	"github.com/zkrecipes/zkrecipes/session"
)

// lease is one Lease on a holding. Its context is a child of the holding's:
// it ends with the holding (loss, last release) or at its own Release.
type lease struct {
	h        *holding
	ctx      context.Context
	cancel   context.CancelCauseFunc
	released atomic.Bool
}

func newLease(h *holding) *lease {
	ctx, cancel := context.WithCancelCause(h.ctx)
	return &lease{h: h, ctx: ctx, cancel: cancel}
}

var _ znode.Lease = (*lease)(nil)

func (l *lease) Context() context.Context { return l.ctx }
func (l *lease) Done() <-chan struct{}    { return l.ctx.Done() }

// Token is the lock node's czxid: every ZooKeeper lock has one.
func (l *lease) Token() (int64, bool) { return l.h.token, true }

func (l *lease) Node() string     { return l.h.node }
func (l *lease) SessionID() int64 { return l.h.sess.ID() }

func (l *lease) Err() error {
	if l.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.ctx)
}

func (l *lease) Release(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	if !l.released.CompareAndSwap(false, true) {
		return recipes.ErrNotHeld
	}
	l.cancel(recipes.ErrReleased) // first; a no-op when the holding already ended: its cause stays
	return l.h.release(ctx)
}

// GuardedMulti implements znode.Lease.
func (l *lease) GuardedMulti(ctx context.Context, ops ...session.Op) ([]zk.MultiResponse, error) {
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
	res, err := l.h.conn.Multi(ctx, append([]session.Op{session.CheckOp(l.h.node, -1)}, ops...)...)
	var me *session.MultiError
	if errors.As(err, &me) && me.Index == 0 && errors.Is(me.Err, zk.ErrNoNode) {
		return nil, fmt.Errorf("%w: %s: %w", session.ErrGuardFailed, l.h.node, me.Err)
	}
	if err != nil {
		return nil, err
	}
	return res[1:], nil
}
