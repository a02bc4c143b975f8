package hold

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Acquisition reports one Acquire or TryAcquire to a recipes.Trace: Begin
// at its start, Done at its return. Without a trace it is a zero value
// that does nothing, and costs no allocation.
type Acquisition struct {
	t         *recipes.Trace
	n         uint64 // the reports' ID
	id        recipes.LockID
	try       bool
	start     time.Time
	contended bool
}

// acquisitions numbers the traced acquisitions.
var acquisitions atomic.Uint64

// Begin starts reporting an acquisition of the lock id to the trace ctx
// carries and to the lock's own (either may be absent); ctx was checked.
func Begin(ctx context.Context, own *recipes.Trace, id recipes.LockID, try bool) Acquisition {
	t := recipes.ContextTrace(ctx).And(own)
	if t == nil {
		return Acquisition{}
	}
	a := Acquisition{t: t, n: acquisitions.Add(1), id: id, try: try, start: time.Now()}
	if t.AcquireStart != nil {
		t.AcquireStart(recipes.AcquireStartInfo{ID: a.n, Lock: id, Try: try, Start: a.start, Context: ctx})
	}
	return a
}

// Queued notes that the lock was found held (or a waiter ahead): the
// acquisition waits, or a TryAcquire is refused. The first call reports
// AcquireQueued. a may be nil.
func (a *Acquisition) Queued() {
	if a == nil || a.contended {
		return
	}
	a.contended = true
	if a.t != nil && a.t.AcquireQueued != nil {
		a.t.AcquireQueued(recipes.AcquireQueuedInfo{ID: a.n, Lock: a.id, Try: a.try})
	}
}

// Contended reports whether Queued was called.
func (a *Acquisition) Contended() bool { return a != nil && a.contended }

// Traced reports whether a trace is listening.
func (a *Acquisition) Traced() bool { return a.t != nil }

// Done reports the end of the acquisition: le and err are what it
// returns, reentered says le re-entered a holding. A lease of a Holding
// (a *Lease, or a type embedding one) taken anew is attached to the
// trace, which is then told of its end (LeaseEnd) and renewals.
func (a *Acquisition) Done(le recipes.Lease, err error, reentered bool) {
	if a.t == nil {
		return
	}
	var c *core
	if h, ok := le.(interface{ holdingCore() *core }); ok && err == nil {
		c = h.holdingCore()
	}
	if !reentered && c != nil {
		c.attach(a.t, a.id, a.start)
	}
	if a.t.AcquireDone == nil {
		return
	}
	info := recipes.AcquireDoneInfo{ID: a.n, Lock: a.id, Try: a.try, Outcome: recipes.OutcomeOf(err), Err: err,
		Waited: time.Since(a.start), Contended: a.contended, Reentered: reentered}
	if c != nil {
		info.Token, info.HasToken = c.token, c.hasToken
	} else if le != nil {
		info.Token, info.HasToken = le.Token()
	}
	a.t.AcquireDone(info)
}

// ServerDeadliner is what an implementation (the T of a Holding) adds to
// report the told-first margin: when the server may let the lock go at
// the earliest, as the client knows it.
type ServerDeadliner interface {
	ServerDeadline() (time.Time, bool)
}

// holdingCore gives Acquisition.Done the holding of a lease.
func (l *Lease) holdingCore() *core { return l.h }

// attach makes the holding report its end to t; a holding lost before
// (between its start and the end of its Acquire) reports at once.
func (h *core) attach(t *recipes.Trace, id recipes.LockID, acquired time.Time) {
	h.mu.Lock()
	h.trace, h.id, h.acquired = t, id, acquired
	lost := h.cause != nil && h.cause != recipes.ErrReleased && !h.reported
	h.reported = h.reported || lost
	h.mu.Unlock()
	if lost {
		h.reportLoss()
	}
}

// Traced returns the trace the holding reports to (nil when none), and its
// lock: for the implementation's own reports (renewals).
func (h *core) Traced() (*recipes.Trace, recipes.LockID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.trace, h.id
}

// Revoked notes that someone asked for the lock: a release that follows is
// reported as recipes.EndRevoked.
func (h *core) Revoked() {
	h.mu.Lock()
	h.revoked = true
	h.mu.Unlock()
}

// reportLoss tells the trace of the holding's loss, with the margin the
// implementation knows. Called once, outside mu, after the contexts were
// cancelled.
func (h *core) reportLoss() {
	h.mu.Lock()
	t, cause, ended := h.trace, h.cause, h.ended
	h.mu.Unlock()
	if t.LeaseEnd == nil {
		return
	}
	info := h.endInfo(recipes.EndCauseOf(cause), cause, ended)
	if d, ok := h.freer.(ServerDeadliner); ok {
		if at, ok := d.ServerDeadline(); ok {
			info.Margin, info.HasMargin = at.Sub(ended), true
		}
	}
	t.LeaseEnd(info)
}

// reportRelease tells the trace of the last Release: released (or revoked),
// or, when Free found the lock gone or someone else's, gone.
func (h *core) reportRelease(freeErr error) {
	h.mu.Lock()
	t, ended, revoked := h.trace, h.ended, h.revoked
	h.mu.Unlock()
	if t == nil || t.LeaseEnd == nil {
		return
	}
	cause, err := recipes.EndReleased, error(recipes.ErrReleased)
	switch {
	case errors.Is(freeErr, recipes.ErrLockLost):
		cause, err = recipes.EndGone, freeErr
	case revoked:
		cause = recipes.EndRevoked
	case freeErr != nil:
		err = freeErr
	}
	t.LeaseEnd(h.endInfo(cause, err, ended))
}

func (h *core) endInfo(cause recipes.EndCause, err error, ended time.Time) recipes.LeaseEndInfo {
	return recipes.LeaseEndInfo{Lock: h.id, Held: ended.Sub(h.acquired), Cause: cause, Err: err,
		Token: h.token, HasToken: h.hasToken}
}
