package tracetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/stalls"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// Backend is what a TTL lock package (the compat locks) gives the trace
// scenarios, RunAcquisitions and RunLeaseEnds. Each function is called
// from the goroutine of the (sub)test it is given and may fail it.
type Backend struct {
	// ID is the LockID the reports about the lock named name carry.
	ID func(name string) locktrace.LockID
	// Lock returns a new Locker for the lock named name, with its own
	// client of the server(s), reporting to tr by the lock's option (tr
	// nil: no trace of its own).
	Lock func(t *testing.T, name string, tr *locktrace.Trace) recipes.Locker
	// Contender, when set, returns the Locker that waits behind another
	// holder in RunAcquisitions; nil: Lock(t, name, nil).
	Contender func(t *testing.T, name string) recipes.Locker
	// NoToken: the backend's leases have no fencing token (Redlock); every
	// report must say so. Otherwise the reports of a holding carry its
	// lease's token.
	NoToken bool
	// Broken returns a Locker for the lock named name, reporting to tr,
	// whose every request to its server fails (a closed client, no
	// server).
	Broken func(t *testing.T, name string, tr *locktrace.Trace) recipes.Locker
	// BrokenErr checks the error the Acquire of a Broken lock returned.
	BrokenErr func(t *testing.T, err error)

	// Lose takes the lock named name from its holder on the server (its
	// key deleted, its row given to someone else) while it is held.
	Lose func(t *testing.T, name string)
	// NotOurs is the error a renewal that finds the lock no longer its
	// holder's wraps, and the lease end it causes too.
	NotOurs error
	// Lapse returns the lock named name, reporting to tr by its option,
	// on a connection the test can cut.
	Lapse func(t *testing.T, name string, tr *locktrace.Trace) Cut
	// LapseMargin is the least margin by which the holder of a Lapse
	// lock's lease must be told its end when its connection is cut: how
	// long before the server may let the lock go. The lease aims at
	// recipes.DriftMargin(ttl) before that (plus what the backend keeps
	// apart, as memcached's coarse clock); a test wants half of it. How
	// late a timer fires beyond that is the OS's and the runtime's: the
	// scenario measures the longest the process was kept from running
	// while it waited (a goroutine that sleeps a millisecond at a time),
	// and discounts it, since no timer of the process could have beaten
	// it.
	LapseMargin time.Duration
}

// Cut is a lock whose connection(s) to its server(s) a test can cut.
type Cut struct {
	Lock recipes.Locker
	// Blackhole makes every connection of Lock answer nothing and close
	// nothing; Restore ends that.
	Blackhole, Restore func()
}

// The names of the locks the scenarios use, so that a backend can
// prepare them (a server that must not wait out a holder it may have
// forgotten).
var (
	AcquisitionLocks = []string{"free", "held"}
	LeaseEndLocks    = []string{"gone-at-renewal", "gone-at-release", "lapse"}
)

// brokenLock is the name of the lock of Backend.Broken.
const brokenLock = "broken"

// scenarioTimeout bounds the context of every call a scenario makes.
const scenarioTimeout = time.Minute

// scenarioContext returns the context of a scenario's calls, cancelled
// when t is done (after its subtests).
func scenarioContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	t.Cleanup(cancel)
	return ctx
}

// acquisition waits for the n-th acquisition (1-based) rec saw to return,
// checks it against its other reports (one AcquireStart with its ID;
// one AcquireQueued when it was contended, else none; the lock id and
// try everywhere; no token where the backend has none) and returns its
// AcquireDone.
func (b Backend) acquisition(t *testing.T, rec *Recorder, n int, id locktrace.LockID, try bool) locktrace.AcquireDoneInfo {
	t.Helper()
	d := rec.AwaitDone(t, n)
	assert.Equal(t, id, d.Lock)
	assert.Equal(t, try, d.Try)
	if b.NoToken {
		assert.False(t, d.HasToken)
	}
	starts, queued := 0, 0
	for _, s := range rec.Starts() {
		if s.ID == d.ID {
			starts++
			assert.Equal(t, id, s.Lock)
			assert.Equal(t, try, s.Try)
		}
	}
	for _, q := range rec.Queued() {
		if q.ID == d.ID {
			queued++
			assert.Equal(t, id, q.Lock)
			assert.Equal(t, try, q.Try)
		}
	}
	assert.Equal(t, 1, starts, "AcquireStart reports of acquisition %d", d.ID)
	if d.Contended {
		assert.Equal(t, 1, queued, "AcquireQueued reports of contended acquisition %d", d.ID)
	} else {
		assert.Zero(t, queued, "AcquireQueued reports of uncontended acquisition %d", d.ID)
	}
	return d
}

// checkToken checks the token of a report of lease's holding: lease's,
// or none where the backend has none.
func (b Backend) checkToken(t *testing.T, lease recipes.Lease, hasToken bool, token int64) {
	t.Helper()
	if b.NoToken {
		assert.False(t, hasToken)
		return
	}
	want, _ := lease.Token()
	assert.True(t, hasToken)
	assert.Equal(t, want, token)
}

// RunAcquisitions checks the outcomes of Acquire and TryAcquire, as a
// Trace sees them, attached by the lock's option and by the context:
// acquired free, re-entered and released; TryAcquire on a held lock;
// deadline and cancellation while waiting; acquired behind a holder; a
// server error. Its locks (AcquisitionLocks) must be free at once.
func RunAcquisitions(t *testing.T, b Backend) {
	ctx := scenarioContext(t)
	t.Run("free, re-entered, released", func(t *testing.T) { acquireFreeReenterRelease(ctx, t, b) })

	// The lock is held by another Lock from here on.
	held, err := b.Lock(t, "held", nil).Acquire(ctx)
	require.NoError(t, err)
	w := waiter{b: b, ctx: ctx, id: b.ID("held")}
	if b.Contender != nil {
		w.contender = b.Contender(t, "held")
	} else {
		w.contender = b.Lock(t, "held", nil)
	}
	t.Run("TryAcquire on a held lock", w.tryHeld)
	t.Run("deadline while waiting", w.deadline)
	t.Run("cancelled while waiting", w.cancelled)
	t.Run("acquired behind a holder", func(t *testing.T) { w.acquireBehind(t, held) })
	t.Run("server error", func(t *testing.T) { acquireBroken(ctx, t, b) })
}

// acquireFreeReenterRelease: a free lock acquired with a trace of its own
// and one in the context (one acquisition, reported to both), re-entered
// twice, then released (one LeaseEnd, at the last Release).
func acquireFreeReenterRelease(ctx context.Context, t *testing.T, b Backend) {
	id := b.ID("free")
	own, byCtx := New(), New()
	l := b.Lock(t, "free", own.Trace())
	lease, err := l.Acquire(locktrace.WithTrace(ctx, byCtx.Trace()))
	require.NoError(t, err)
	for _, rec := range []*Recorder{own, byCtx} {
		d := b.acquisition(t, rec, 1, id, false)
		assert.Equal(t, locktrace.OutcomeAcquired, d.Outcome)
		assert.NoError(t, d.Err)
		assert.False(t, d.Contended)
		assert.False(t, d.Reentered)
		b.checkToken(t, lease, d.HasToken, d.Token)
	}
	assert.Equal(t, own.Dones()[0].ID, byCtx.Dones()[0].ID, "one acquisition, reported to both traces")

	again, third := reenterTwice(ctx, t, b, l, lease, id, own, byCtx)
	require.NoError(t, third.Release(ctx))
	require.NoError(t, again.Release(ctx))
	assert.Empty(t, own.Ends(), "a holding ends at its last Release")
	require.NoError(t, lease.Release(ctx))
	for _, rec := range []*Recorder{own, byCtx} {
		end := rec.AwaitEnd(t, 1)
		assert.Equal(t, locktrace.EndReleased, end.Cause)
		assert.Equal(t, recipes.ErrReleased, end.Err)
		assert.Equal(t, id, end.Lock)
		assert.Positive(t, end.Held)
		assert.False(t, end.HasMargin)
		b.checkToken(t, lease, end.HasToken, end.Token)
		assert.Len(t, rec.Ends(), 1, "one LeaseEnd for the holding and its re-entries")
	}
}

// reenterTwice re-enters lease twice with its context, which carries the
// context's trace: both traces see each re-entry, with lease's token.
func reenterTwice(ctx context.Context, t *testing.T, b Backend, l recipes.Locker, lease recipes.Lease,
	id locktrace.LockID, own, byCtx *Recorder) (again, third recipes.Lease) {
	again, err := l.Acquire(lease.Context())
	require.NoError(t, err)
	third, err = l.TryAcquire(again.Context())
	require.NoError(t, err)
	for _, rec := range []*Recorder{own, byCtx} {
		for n, try := range map[int]bool{2: false, 3: true} {
			d := b.acquisition(t, rec, n, id, try)
			assert.Equal(t, locktrace.OutcomeAcquired, d.Outcome)
			assert.True(t, d.Reentered)
			assert.False(t, d.Contended)
			if !b.NoToken {
				token, _ := lease.Token()
				assert.Equal(t, token, d.Token)
			}
		}
	}
	return again, third
}

// waiter is the contender for the lock "held" (id) that another Lock holds,
// in the scenarios of RunAcquisitions that wait.
type waiter struct {
	b         Backend
	ctx       context.Context
	id        locktrace.LockID
	contender recipes.Locker
}

// tryHeld: TryAcquire is refused with ErrLocked, reported as contended,
// with no token, after one AcquireQueued.
func (w waiter) tryHeld(t *testing.T) {
	rec := New()
	_, err := w.contender.TryAcquire(locktrace.WithTrace(w.ctx, rec.Trace()))
	require.ErrorIs(t, err, recipes.ErrLocked)
	d := w.b.acquisition(t, rec, 1, w.id, true)
	assert.Equal(t, locktrace.OutcomeLocked, d.Outcome)
	assert.ErrorIs(t, d.Err, recipes.ErrLocked)
	assert.True(t, d.Contended)
	assert.False(t, d.HasToken)
	require.Len(t, rec.Queued(), 1)
	assert.Equal(t, rec.Starts()[0].ID, rec.Queued()[0].ID)
}

// deadline: an Acquire whose context's deadline passes while it waits is
// reported as a timeout.
func (w waiter) deadline(t *testing.T) {
	rec := New()
	short, cancel := context.WithTimeout(w.ctx, 500*time.Millisecond)
	defer cancel()
	_, err := w.contender.Acquire(locktrace.WithTrace(short, rec.Trace()))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	d := w.b.acquisition(t, rec, 1, w.id, false)
	assert.Equal(t, locktrace.OutcomeTimeout, d.Outcome)
	assert.True(t, d.Contended, "the first attempt found the lock held")
}

// cancelled: an Acquire whose context is cancelled once it is queued is
// reported as cancelled.
func (w waiter) cancelled(t *testing.T) {
	rec := New()
	cctx, cancel := context.WithCancel(locktrace.WithTrace(w.ctx, rec.Trace()))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := w.contender.Acquire(cctx)
		done <- err
	}()
	rec.Await(t, "AcquireQueued", func(r *Recorder) bool { return len(r.Queued()) > 0 })
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	d := w.b.acquisition(t, rec, 1, w.id, false)
	assert.Equal(t, locktrace.OutcomeCanceled, d.Outcome)
	assert.True(t, d.Contended)
}

// acquireBehind: an Acquire queued behind held is granted when held is
// released, reported as contended, with its lease's token.
func (w waiter) acquireBehind(t *testing.T, held recipes.Lease) {
	rec := New()
	got := make(chan recipes.Lease, 1)
	go func() {
		lease, err := w.contender.Acquire(locktrace.WithTrace(w.ctx, rec.Trace()))
		assert.NoError(t, err)
		got <- lease
	}()
	rec.Await(t, "AcquireQueued", func(r *Recorder) bool { return len(r.Queued()) > 0 })
	require.NoError(t, held.Release(w.ctx))
	lease := <-got
	require.NotNil(t, lease)
	d := w.b.acquisition(t, rec, 1, w.id, false)
	assert.Equal(t, locktrace.OutcomeAcquired, d.Outcome)
	assert.True(t, d.Contended)
	w.b.checkToken(t, lease, d.HasToken, d.Token)
	require.NoError(t, lease.Release(w.ctx))
}

// acquireBroken: an Acquire whose server fails is reported as an error
// that is ErrNotAcquired, not contended, with no token.
func acquireBroken(ctx context.Context, t *testing.T, b Backend) {
	rec := New()
	_, err := b.Broken(t, brokenLock, rec.Trace()).Acquire(ctx)
	require.Error(t, err)
	b.BrokenErr(t, err)
	d := b.acquisition(t, rec, 1, b.ID(brokenLock), false)
	assert.Equal(t, locktrace.OutcomeError, d.Outcome)
	assert.ErrorIs(t, d.Err, recipes.ErrNotAcquired)
	assert.False(t, d.Contended)
	assert.False(t, d.HasToken)
}

// RunLeaseEnds checks how a holding ends, as a Trace sees it, and its
// renewals: the lock lost under the holder and found so by a renewal, or
// by Release; renewals, then a cut connection and the TTL's lapse. Its
// locks (LeaseEndLocks) must be free at once.
func RunLeaseEnds(t *testing.T, b Backend) {
	ctx := scenarioContext(t)

	// The lock lost under the holder (evicted, an operator): its next
	// renewal finds it gone, and the holder is told then, before the TTL
	// counted from the last confirmed request would have run out.
	t.Run("gone at a renewal", func(t *testing.T) {
		rec := New()
		lease, err := b.Lock(t, "gone-at-renewal", rec.Trace()).Acquire(ctx)
		require.NoError(t, err)
		b.Lose(t, "gone-at-renewal")
		end := rec.AwaitEnd(t, 1)
		t.Logf("gone at a renewal: told %v before the server-side expiry", end.Margin)
		assert.Equal(t, locktrace.EndGone, end.Cause)
		assert.ErrorIs(t, end.Err, recipes.ErrLockLost)
		assert.ErrorIs(t, end.Err, b.NotOurs)
		assert.Equal(t, b.ID("gone-at-renewal"), end.Lock)
		assert.Positive(t, end.Held)
		assert.True(t, end.HasMargin)
		assert.Positive(t, end.Margin, "the holder is told before the server may let the lock go")
		if b.NoToken {
			assert.False(t, end.HasToken)
		}
		renewals := rec.Renewals()
		require.NotEmpty(t, renewals)
		assert.ErrorIs(t, renewals[len(renewals)-1].Err, b.NotOurs, "the renewal that found it gone")
		assert.ErrorIs(t, lease.Release(ctx), recipes.ErrLockLost)
		assert.Len(t, rec.Ends(), 1, "the Release of a lost holding is no second end")
	})

	// The lock lost, and Release comes before a renewal notices (one is
	// due a third of the TTL after the grant): Release finds it gone.
	t.Run("gone at Release", func(t *testing.T) {
		rec := New()
		lease, err := b.Lock(t, "gone-at-release", nil).Acquire(locktrace.WithTrace(ctx, rec.Trace()))
		require.NoError(t, err)
		b.Lose(t, "gone-at-release")
		require.ErrorIs(t, lease.Release(ctx), recipes.ErrLockLost)
		end := rec.AwaitEnd(t, 1)
		assert.Equal(t, locktrace.EndGone, end.Cause)
		assert.ErrorIs(t, end.Err, recipes.ErrLockLost)
		assert.False(t, end.HasMargin, "found at Release, not told ahead of an expiry")
		assert.Positive(t, end.Held)
		assert.Len(t, rec.Ends(), 1)
	})

	// Renewals confirmed while the connection works; then a blackhole: the
	// renewal in flight gets no answer, and the lease ends at its deadline.
	t.Run("renewals, then TTL lapse", func(t *testing.T) {
		rec := New()
		id := b.ID("lapse")
		tr, toldAt := timeEnds(rec.Trace())
		cut := b.Lapse(t, "lapse", tr)
		lease, err := cut.Lock.Acquire(ctx)
		require.NoError(t, err)
		rec.Await(t, "a confirmed renewal", func(r *Recorder) bool { return len(r.Renewals()) > 0 })
		first := rec.Renewals()[0]
		assert.NoError(t, first.Err)
		assert.Equal(t, id, first.Lock)
		assert.Positive(t, first.Latency)
		require.NoError(t, lease.Err())

		cut.Blackhole()
		watch := stalls.Start()
		defer watch.Stop()
		end := rec.AwaitEnd(t, 1)
		// The lease aims at no more than twice LapseMargin: a stall that
		// made it late overlaps the time from when its timer was due to
		// when it told its holder.
		told := toldAt()
		stalled := watch.Longest(told.Add(-(2*b.LapseMargin - end.Margin)), told)
		t.Logf("TTL lapse: told %v before the server-side expiry (at least %v wanted, less the process's stall meanwhile: %v)",
			end.Margin, b.LapseMargin, stalled)
		assert.Equal(t, locktrace.EndTTLLapsed, end.Cause)
		assert.ErrorIs(t, end.Err, recipes.ErrLockLost)
		assert.Equal(t, id, end.Lock)
		assert.True(t, end.HasMargin)
		assert.GreaterOrEqual(t, end.Margin+stalled, b.LapseMargin,
			"told %v before the expiry, %v late on the %v wanted, of which the process's stalls explain %v", end.Margin, b.LapseMargin-end.Margin, b.LapseMargin, stalled)
		rec.Await(t, "a failed renewal", func(r *Recorder) bool {
			for _, rn := range r.Renewals() {
				if rn.Err != nil {
					return true
				}
			}
			return false
		})
		for _, rn := range rec.Renewals() {
			assert.Equal(t, id, rn.Lock)
		}
		cut.Restore()
		assert.ErrorIs(t, lease.Release(ctx), recipes.ErrLockLost)
		assert.Len(t, rec.Ends(), 1)
	})
}
