package leader

import (
	"context"
	"errors"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Tracing. The leadership is a lock of the engine, of kind "leader": its
// acquisitions (a campaign, Lead's and Run's included) and its end are
// reported as every lock's, to the trace of the context of the call
// (locktrace.WithTrace) and to the client's (session.WithTrace). A
// participant that gains the leadership also reports Leadership (Leader
// true) to both, the context's first, and when that leadership ends
// Leadership (Leader false): with Err nil when it was given up (released,
// Lead's function returned, Run's context ended, or the client closed),
// and otherwise the cause of the leadership's end, an error that is
// recipes.ErrLockLost (locktrace.EndCauseOf classifies it). A campaign that
// re-entered a leadership held (its context came from one) reports nothing
// more: that leadership goes on.

// acquire is Campaign, Acquire and TryAcquire: the lock's Acquire, and the
// Leadership reports when a trace wants them.
func (e *Election) acquire(ctx context.Context, try bool) (recipes.Lease, error) {
	if ctx == nil { // the lock refuses it
		return e.lock.Acquire(ctx, try)
	}
	t := locktrace.ContextTrace(ctx).And(e.c.Trace())
	if t == nil || t.Leadership == nil {
		return e.lock.Acquire(ctx, try)
	}
	// A re-entry keeps the node of the leadership ctx carries; a leadership
	// taken anew (even when that one ended meanwhile) has a node of its own.
	before, held := e.lock.HeldNode(ctx)
	le, err := e.lock.Acquire(ctx, try)
	if err != nil {
		return le, err
	}
	if zl, ok := le.(znode.Lease); ok && held && zl.Node() == before {
		return le, nil
	}
	id := locktrace.LockID{Backend: engine.Backend, Kind: "leader", Name: e.path}
	t.Leadership(locktrace.LeadershipInfo{Lock: id, Leader: true})
	end := e.termContext(le)
	context.AfterFunc(end, func() {
		t.Leadership(locktrace.LeadershipInfo{Lock: id, Err: lossCause(context.Cause(end))})
	})
	return le, nil
}

// termContext is the context of the holding le is the first lease of: it
// ends when the leadership does, at the last Release of the leases that
// re-entered it or at its loss, with that cause. The holding's context
// carries the holding under the lock (the key of re-entry, which is how
// the engine finds it); a lease's own context would end at that lease's
// Release while a lease that re-entered it still leads.
func (e *Election) termContext(le recipes.Lease) context.Context {
	lctx := le.Context()
	if h, ok := lctx.Value(e.lock).(interface{ Context() context.Context }); ok {
		return h.Context()
	}
	return lctx
}

// lossCause is the Err of a Leadership report for a leadership that ended
// with cause: nil when it was given up (released, or its client closed).
func lossCause(cause error) error {
	if cause == recipes.ErrReleased || errors.Is(cause, session.ErrClosed) {
		return nil
	}
	return cause
}
