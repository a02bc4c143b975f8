package hold

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// Acquisition reports one Acquire or TryAcquire to a locktrace.Trace: Begin
// at its start, Done at its return. Without a trace Begin returns nil,
// whose methods do nothing: an untraced acquisition allocates nothing.
type Acquisition struct {
	t         *locktrace.Trace
	n         uint64 // the reports' ID
	id        locktrace.LockID
	try       bool
	start     time.Time
	contended bool
	quiet     bool
}

// acquisitions numbers the traced acquisitions.
var acquisitions atomic.Uint64

// Begin starts reporting an acquisition of the lock id to the trace ctx
// carries and to the lock's own (either may be absent); ctx was checked.
func Begin(ctx context.Context, own *locktrace.Trace, id locktrace.LockID, try bool) *Acquisition {
	t := locktrace.ContextTrace(ctx).And(own)
	if t == nil {
		return nil
	}
	a := &Acquisition{t: t, n: acquisitions.Add(1), id: id, try: try, start: time.Now()}
	if t.AcquireStart != nil {
		t.AcquireStart(locktrace.AcquireStartInfo{ID: a.n, Lock: id, Try: try, Start: a.start, Context: ctx})
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
	if a.t.AcquireQueued != nil {
		a.t.AcquireQueued(locktrace.AcquireQueuedInfo{ID: a.n, Lock: a.id, Try: a.try})
	}
}

// Quiet notes that a server in its quiet period after a restart granted
// the lock to no one (it may be free): the acquisition waits that out, or
// a TryAcquire is refused. Not a holder found: AcquireQueued is not
// reported for it. a may be nil.
func (a *Acquisition) Quiet() {
	if a != nil {
		a.quiet = true
	}
}

// Contended reports whether Queued was called.
func (a *Acquisition) Contended() bool { return a != nil && a.contended }

// Done reports the end of the acquisition: le and err are what it
// returns, reentered says le re-entered a holding. A lease of a Holding
// (a *Lease, or a type embedding one) taken anew is attached to the
// trace, which is then told of its end (LeaseEnd) and renewals.
func (a *Acquisition) Done(le recipes.Lease, err error, reentered bool) {
	if a == nil {
		return
	}
	var c *core
	if h, ok := le.(interface{ holdingCore() *core }); ok && err == nil {
		c = h.holdingCore()
	}
	if !reentered && c != nil {
		c.attach(a.t, a.id, time.Now()) // held from now: the wait is AcquireDone's
	}
	if a.t.AcquireDone == nil {
		return
	}
	info := locktrace.AcquireDoneInfo{ID: a.n, Lock: a.id, Try: a.try, Outcome: locktrace.OutcomeOf(err), Err: err,
		Waited: time.Since(a.start), Contended: a.contended, Quiet: a.quiet, Reentered: reentered}
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

// traced is what a holding that reports to a trace keeps: allocated when
// it is attached, so that an untraced holding carries one nil pointer.
type traced struct {
	trace    *locktrace.Trace
	id       locktrace.LockID
	acquired time.Time
	ended    time.Time
	revoked  bool // someone asked for the lock
	reported bool // the loss was reported
}

// attach makes the holding report its end to t; a holding lost before
// (between its start and the end of its Acquire) reports at once.
func (h *core) attach(t *locktrace.Trace, id locktrace.LockID, acquired time.Time) {
	tr := &traced{trace: t, id: id, acquired: acquired}
	h.mu.Lock()
	h.tr = tr
	lost := h.cause != nil && h.cause != recipes.ErrReleased
	if lost {
		tr.ended, tr.reported = time.Now(), true // the end was a moment ago
	}
	h.mu.Unlock()
	if lost {
		h.reportLoss()
	}
}

// Traced returns the trace the holding reports to (nil when none), and its
// lock: for the implementation's own reports (renewals).
func (h *core) Traced() (*locktrace.Trace, locktrace.LockID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tr == nil {
		return nil, locktrace.LockID{}
	}
	return h.tr.trace, h.tr.id
}

// Revoked notes that someone asked for the lock: a release that follows is
// reported as locktrace.EndRevoked.
func (h *core) Revoked() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tr != nil {
		h.tr.revoked = true
	}
}

// reportLoss tells the trace of the holding's loss, with the margin the
// implementation knows. Called once, outside mu, after the contexts were
// cancelled.
func (h *core) reportLoss() {
	h.mu.Lock()
	tr, cause := *h.tr, h.cause
	h.mu.Unlock()
	if tr.trace.LeaseEnd == nil {
		return
	}
	info := h.endInfo(&tr, locktrace.EndCauseOf(cause), cause)
	if d, ok := h.freer.(ServerDeadliner); ok {
		if at, ok := d.ServerDeadline(); ok {
			info.Margin, info.HasMargin = at.Sub(tr.ended), true
		}
	}
	tr.trace.LeaseEnd(info)
}

// reportRelease tells the trace of the last Release: released (or revoked),
// or, when Free found the lock gone or someone else's, gone.
func (h *core) reportRelease(freeErr error) {
	h.mu.Lock()
	if h.tr == nil || h.tr.trace.LeaseEnd == nil {
		h.mu.Unlock()
		return
	}
	tr := *h.tr
	h.mu.Unlock()
	cause, err := locktrace.EndReleased, error(recipes.ErrReleased)
	switch {
	case errors.Is(freeErr, recipes.ErrLockLost):
		cause, err = locktrace.EndGone, freeErr
	case tr.revoked:
		cause = locktrace.EndRevoked
	case freeErr != nil:
		err = freeErr
	}
	tr.trace.LeaseEnd(h.endInfo(&tr, cause, err))
}

func (h *core) endInfo(tr *traced, cause locktrace.EndCause, err error) locktrace.LeaseEndInfo {
	return locktrace.LeaseEndInfo{Lock: tr.id, Held: tr.ended.Sub(tr.acquired), Cause: cause, Err: err,
		Token: h.token, HasToken: h.hasToken}
}
