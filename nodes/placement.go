package nodes

import (
	"context"

	"github.com/zkrecipes/zkrecipes/session"
)

// Placement is one stretch of time during which a node is in place: made
// (or found, with our data) by the current session and not deleted since.
// Like a lease, its Context ends, with a cause, the moment the node can no
// longer be trusted to be there: the session is suspended or lost
// (session.ErrSuspended, session.ErrSessionLost), someone deleted the node
// (ErrDeleted), or it was closed (ErrClosed). A node back in place is a new
// Placement, with the next Generation: wait for it with Persistent.Placed.
type Placement struct {
	path   string
	stat   session.Stat
	gen    uint64
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newPlacement(path string, st session.Stat, gen uint64) *Placement {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Placement{path: path, stat: st, gen: gen, ctx: ctx, cancel: cancel}
}

// Path is the node's path (with its sequence number, for a sequential
// mode).
func (p *Placement) Path() string { return p.path }

// Stat is the node's Stat when it was found in place.
func (p *Placement) Stat() session.Stat { return p.stat }

// Generation counts the placements of a node: 1 for the first, one more
// each time it is back in place.
func (p *Placement) Generation() uint64 { return p.gen }

// Context is cancelled, with a cause (context.Cause), when the node may no
// longer be in place.
func (p *Placement) Context() context.Context { return p.ctx }

// Done is Context().Done().
func (p *Placement) Done() <-chan struct{} { return p.ctx.Done() }

// Err is nil while the node is in place, and then the cause of the end.
func (p *Placement) Err() error {
	if p.ctx.Err() == nil {
		return nil
	}
	return context.Cause(p.ctx)
}
