package locktrace

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Trace is a set of hooks that report what the locks do, shaped like
// net/http/httptrace's ClientTrace: each field is optional, and a nil
// field (or a nil *Trace) costs nothing: no allocation on the acquire and
// release paths.
//
// A Trace reaches a lock in two ways, and when both are set both are
// called, the context's first:
//
//   - per call, through the context of Acquire or TryAcquire (WithTrace);
//     the lease taken keeps it for its end and its renewals;
//   - per client or lock, by an option: session.WithTrace for a ZooKeeper
//     client (every recipe made on it), WithTrace of each compat lock.
//
// The hooks are called synchronously, on the goroutine that sees the
// event: the caller of Acquire and Release, the goroutine that tells a
// session value's end or a TTL lapse (other holders are told after the
// hook returns), a renewal's goroutine. So a hook must not block, and
// must not call the lock or its client: record what it needs and return.
// Hooks may be called concurrently, from several goroutines.
type Trace struct {
	// AcquireStart: an Acquire or TryAcquire began (its arguments were
	// valid). Each is followed by exactly one AcquireDone, with the same
	// ID.
	AcquireStart func(AcquireStartInfo)
	// AcquireQueued: the acquisition found the lock held (or a waiter
	// ahead): it waits, or, for TryAcquire, is refused. At most once per
	// acquisition, between its AcquireStart and AcquireDone.
	AcquireQueued func(AcquireQueuedInfo)
	// AcquireDone: the Acquire or TryAcquire returned.
	AcquireDone func(AcquireDoneInfo)
	// LeaseEnd: a holding ended, once for all the leases that re-entered
	// it: released by its last Release, or lost. For a loss it is called
	// when the holder is told (the leases' contexts are cancelled just
	// before); for a release, once the lock is given up on the server (or
	// found gone).
	LeaseEnd func(LeaseEndInfo)
	// Renewal: a TTL lease's renewal returned (compat backends).
	Renewal func(RenewalInfo)
	// Leadership: a leader election participant gained or lost the
	// leadership.
	Leadership func(LeadershipInfo)
}

// LockID says what a lock is, in every report about it.
type LockID struct {
	// Backend: "zookeeper", "redis", "redlock", "memcached", "postgres",
	// "mysql", or "multi" for a MultiLock.
	Backend string
	// Kind: "mutex", "read", "write", "exclusive", "semaphore",
	// "semaphore-mutex", "leader", "lock" (a compat lock) or "multilock".
	Kind string
	// Name: the lock's path (ZooKeeper) or key or name (compat).
	Name string
}

// Outcome is how an Acquire or TryAcquire ended.
type Outcome string

// The outcomes.
const (
	OutcomeAcquired Outcome = "acquired"
	// OutcomeLocked: TryAcquire found the lock held (ErrLocked).
	OutcomeLocked Outcome = "locked"
	// OutcomeTimeout: the context's deadline passed while waiting.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeCanceled: the context was cancelled while waiting.
	OutcomeCanceled Outcome = "canceled"
	// OutcomeError: anything else (the server, the connection, bad use).
	OutcomeError Outcome = "error"
)

// OutcomeOf is the outcome of an Acquire that returned err.
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OutcomeAcquired
	case errors.Is(err, recipes.ErrLocked):
		return OutcomeLocked
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	}
	return OutcomeError
}

// EndCause is why a holding ended.
type EndCause string

// The causes of a holding's end.
const (
	// EndReleased: its last lease was released.
	EndReleased EndCause = "released"
	// EndRevoked: released after someone asked for it (revocation).
	EndRevoked EndCause = "revoked"
	// EndSuspended: the ZooKeeper connection was suspended; the session
	// may still live.
	EndSuspended EndCause = "suspended"
	// EndSessionLost: the ZooKeeper session expired, or stayed untrusted
	// too long.
	EndSessionLost EndCause = "session_lost"
	// EndClosed: the client was closed while the lock was held.
	EndClosed EndCause = "closed"
	// EndTTLLapsed: no renewal was confirmed within the TTL less the
	// margin.
	EndTTLLapsed EndCause = "ttl_lapsed"
	// EndGone: the lock was found gone from the server, or someone
	// else's (a renewal, or the release, found it so).
	EndGone EndCause = "gone"
	// EndRenewalFailed: a renewal failed with an error retrying cannot
	// mend.
	EndRenewalFailed EndCause = "renewal_failed"
	// EndLost: lost for another reason (a member of a MultiLock lost for
	// a cause of its own backend, say).
	EndLost EndCause = "lost"
)

// EndCauseOf classifies the cause of a holding's end (context.Cause of a
// lease's Context, or its Err): ErrReleased is EndReleased; otherwise the
// first error in err's chain with a method LeaseEndCause() EndCause
// decides (NewEndError makes one); otherwise EndLost.
func EndCauseOf(err error) EndCause {
	if err == nil || err == recipes.ErrReleased {
		return EndReleased
	}
	var c interface{ LeaseEndCause() EndCause }
	if errors.As(err, &c) {
		return c.LeaseEndCause()
	}
	return EndLost
}

// NewEndError returns an error with text that EndCauseOf classifies as
// cause, for a backend's sentinel errors.
func NewEndError(text string, cause EndCause) error { return &endError{text, cause} }

type endError struct {
	text  string
	cause EndCause
}

func (e *endError) Error() string           { return e.text }
func (e *endError) LeaseEndCause() EndCause { return e.cause }

// AcquireStartInfo is AcquireStart's report.
type AcquireStartInfo struct {
	// ID tells this acquisition's reports from the others' (AcquireQueued
	// and AcquireDone carry it): unique in the process.
	ID   uint64
	Lock LockID
	// Try: a TryAcquire.
	Try bool
	// Start is when the call began.
	Start time.Time
	// Context is the call's context (to parent a span on the caller's,
	// say); do not keep it past AcquireDone.
	Context context.Context
}

// AcquireQueuedInfo is AcquireQueued's report.
type AcquireQueuedInfo struct {
	ID   uint64
	Lock LockID
	Try  bool
}

// AcquireDoneInfo is AcquireDone's report.
type AcquireDoneInfo struct {
	ID      uint64
	Lock    LockID
	Try     bool
	Outcome Outcome
	// Err is what the call returned (nil when acquired).
	Err error
	// Waited is the time from AcquireStart to the return.
	Waited time.Duration
	// Contended: another holder (or waiter ahead) was found, so the call
	// had to wait or, for TryAcquire, was refused.
	Contended bool
	// Quiet: a server in its quiet period after a restart (it may have
	// forgotten a holder; see recipes.ErrQuiet) granted the lock to no
	// one, so the call waited that out or, for TryAcquire, was refused:
	// the lock may have been free. Contended says whether a holder was
	// found as well.
	Quiet bool
	// Reentered: the lease re-entered a holding the context carried; no
	// request was made.
	Reentered bool
	// Token and HasToken are the lease's Token when acquired.
	Token    int64
	HasToken bool
}

// LeaseEndInfo is LeaseEnd's report.
type LeaseEndInfo struct {
	Lock LockID
	// Held is the time from the grant (when Acquire returned; the wait
	// before is AcquireDone's Waited) to the end: to the release, or to
	// the moment the holder was told of a loss.
	Held  time.Duration
	Cause EndCause
	// Err is the holding's cause: ErrReleased, an ErrLockLost error that
	// says why, or, for a release that found the lock gone, Release's
	// error.
	Err error
	// Margin is the told-first margin, for a loss (HasMargin): how long
	// before the server may let the lock go the holder was told; for a
	// TTL lease the time left to the server-side expiry, for a ZooKeeper
	// session the time left to the last reply's send time plus the
	// session timeout. A negative margin means the holder was told late.
	Margin    time.Duration
	HasMargin bool
	Token     int64
	HasToken  bool
}

// RenewalInfo is Renewal's report.
type RenewalInfo struct {
	Lock LockID
	// Latency is how long the renewal took.
	Latency time.Duration
	// Err is nil when the server confirmed it.
	Err error
}

// LeadershipInfo is Leadership's report.
type LeadershipInfo struct {
	Lock LockID
	// Leader: gained (true) or lost (false).
	Leader bool
	// Err is why it was lost (nil when gained, or given up by Close).
	Err error
}

type traceKey struct{}

// WithTrace returns ctx carrying t: an Acquire or TryAcquire called with
// it (or with a context derived from it) reports to t, and so does the
// lease it takes. A trace already in ctx is called too, after t.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	if old := ContextTrace(ctx); old != nil {
		t = t.And(old)
	}
	return context.WithValue(ctx, traceKey{}, t)
}

// ContextTrace returns the Trace ctx carries, or nil.
func ContextTrace(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

// And returns a Trace that calls t's hooks and then o's. Either may be
// nil.
func (t *Trace) And(o *Trace) *Trace {
	switch {
	case t == nil:
		return o
	case o == nil:
		return t
	}
	return &Trace{
		AcquireStart:  both(t.AcquireStart, o.AcquireStart),
		AcquireQueued: both(t.AcquireQueued, o.AcquireQueued),
		AcquireDone:   both(t.AcquireDone, o.AcquireDone),
		LeaseEnd:      both(t.LeaseEnd, o.LeaseEnd),
		Renewal:       both(t.Renewal, o.Renewal),
		Leadership:    both(t.Leadership, o.Leadership),
	}
}

func both[I any](a, b func(I)) func(I) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(i I) { a(i); b(i) }
}
