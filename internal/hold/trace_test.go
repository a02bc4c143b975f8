package hold

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

var testID = locktrace.LockID{Backend: "test", Kind: "lock", Name: "l"}

// deadlined is an implementation that knows when the server may let the
// lock go.
type deadlined struct {
	at  time.Time
	err error // Free's
}

func (d *deadlined) Free(context.Context) error        { return d.err }
func (d *deadlined) ServerDeadline() (time.Time, bool) { return d.at, true }

// recorded is a Trace that keeps what it is told (one goroutine).
type recorded struct {
	starts []locktrace.AcquireStartInfo
	queued []locktrace.AcquireQueuedInfo
	dones  []locktrace.AcquireDoneInfo
	ends   []locktrace.LeaseEndInfo
}

func (r *recorded) trace() *locktrace.Trace {
	return &locktrace.Trace{
		AcquireStart:  func(i locktrace.AcquireStartInfo) { r.starts = append(r.starts, i) },
		AcquireQueued: func(i locktrace.AcquireQueuedInfo) { r.queued = append(r.queued, i) },
		AcquireDone:   func(i locktrace.AcquireDoneInfo) { r.dones = append(r.dones, i) },
		LeaseEnd:      func(i locktrace.LeaseEndInfo) { r.ends = append(r.ends, i) },
	}
}

// An acquisition is reported from start to done under one ID, with the
// context's trace and the lock's own both told; its holding's loss is
// reported once, with the margin to the implementation's deadline.
func TestAcquisitionAndLoss(t *testing.T) {
	var byCtx, own recorded
	ctx := locktrace.WithTrace(context.Background(), byCtx.trace())
	a := Begin(ctx, own.trace(), testID, false)
	a.Queued()
	a.Queued()
	impl := &deadlined{at: time.Now().Add(time.Hour)}
	_, first := New(ctx, &owner{}, 9, true, impl)
	a.Done(first, nil, false)

	for _, r := range []*recorded{&byCtx, &own} {
		require.Len(t, r.starts, 1)
		require.Len(t, r.queued, 1, "queued once")
		require.Len(t, r.dones, 1)
		assert.Equal(t, r.starts[0].ID, r.queued[0].ID)
		assert.Equal(t, r.starts[0].ID, r.dones[0].ID)
		assert.Same(t, ctx, r.starts[0].Context)
		d := r.dones[0]
		assert.Equal(t, locktrace.OutcomeAcquired, d.Outcome)
		assert.True(t, d.Contended)
		assert.Equal(t, int64(9), d.Token)
		assert.True(t, d.HasToken)
	}
	second := HeldBy[*deadlined](first.Context(), first.h.owner).Reenter()
	b := Begin(first.Context(), nil, testID, false)
	b.Done(second, nil, true)
	assert.True(t, byCtx.dones[1].Reentered)
	assert.NotEqual(t, byCtx.dones[0].ID, byCtx.dones[1].ID)

	cause := fmt.Errorf("%w: test: %w", recipes.ErrLockLost, locktrace.NewEndError("session: session lost", locktrace.EndSessionLost))
	first.h.Lose(cause)
	first.h.Lose(errors.New("a second cause is ignored"))
	require.Len(t, byCtx.ends, 1, "one report for the holding, not one per lease")
	e := byCtx.ends[0]
	assert.Equal(t, locktrace.EndSessionLost, e.Cause)
	assert.Same(t, cause, e.Err)
	assert.True(t, e.HasMargin)
	assert.Greater(t, e.Margin, 59*time.Minute)
	assert.Equal(t, testID, e.Lock)
	assert.ErrorIs(t, second.Release(context.Background()), recipes.ErrLockLost)
	assert.ErrorIs(t, first.Release(context.Background()), recipes.ErrLockLost)
	assert.Len(t, byCtx.ends, 1, "the releases after the loss report nothing")
}

// A release is reported after Free: released, revoked when someone asked
// for the lock, gone when Free found it gone.
func TestReleaseReports(t *testing.T) {
	for _, tc := range []struct {
		name    string
		revoked bool
		freeErr error
		want    locktrace.EndCause
	}{
		{"released", false, nil, locktrace.EndReleased},
		{"revoked", true, nil, locktrace.EndRevoked},
		{"gone", false, fmt.Errorf("%w: node deleted", recipes.ErrLockLost), locktrace.EndGone},
		{"failed free", false, errors.New("connection lost"), locktrace.EndReleased},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r recorded
			ctx := locktrace.WithTrace(context.Background(), r.trace())
			a := Begin(ctx, nil, testID, true)
			h, first := New(ctx, &owner{}, 0, false, &deadlined{err: tc.freeErr})
			a.Done(first, nil, false)
			if tc.revoked {
				h.Revoked()
			}
			err := first.Release(context.Background())
			assert.ErrorIs(t, err, tc.freeErr)
			require.Len(t, r.ends, 1)
			assert.Equal(t, tc.want, r.ends[0].Cause)
			assert.False(t, r.ends[0].HasMargin, "no margin for a release")
			assert.False(t, r.ends[0].HasToken)
			assert.GreaterOrEqual(t, r.ends[0].Held, time.Duration(0))
		})
	}
}

// A holding lost between its start and the end of its Acquire reports its
// loss when the acquisition attaches it.
func TestLossBeforeAttach(t *testing.T) {
	var r recorded
	ctx := locktrace.WithTrace(context.Background(), r.trace())
	a := Begin(ctx, nil, testID, false)
	h, first := New(ctx, &owner{}, 1, true, &deadlined{at: time.Now()})
	h.Lose(fmt.Errorf("%w: lapsed", recipes.ErrLockLost))
	assert.Empty(t, r.ends, "nothing attached yet")
	a.Done(first, nil, false)
	require.Len(t, r.ends, 1)
	assert.Equal(t, locktrace.EndLost, r.ends[0].Cause, "an unclassified cause")
	assert.True(t, r.ends[0].HasMargin)
}

// Failed acquisitions report their outcome and no lease.
func TestFailedAcquisitions(t *testing.T) {
	var r recorded
	ctx, cancel := context.WithCancel(locktrace.WithTrace(context.Background(), r.trace()))
	for _, err := range []error{
		fmt.Errorf("%w: test", recipes.ErrLocked),
		fmt.Errorf("%w: %w", recipes.ErrNotAcquired, context.DeadlineExceeded),
		fmt.Errorf("%w: %w", recipes.ErrNotAcquired, context.Canceled),
		fmt.Errorf("%w: server down", recipes.ErrNotAcquired),
	} {
		a := Begin(ctx, nil, testID, false)
		a.Done(nil, err, false)
	}
	cancel()
	var got []locktrace.Outcome
	for _, d := range r.dones {
		got = append(got, d.Outcome)
		assert.False(t, d.HasToken)
	}
	assert.Equal(t, []locktrace.Outcome{locktrace.OutcomeLocked, locktrace.OutcomeTimeout, locktrace.OutcomeCanceled, locktrace.OutcomeError}, got)
	assert.Empty(t, r.ends)
}

// A quiet period waited out is reported as Quiet, not as a holder found:
// no AcquireQueued, and Contended only when a holder was found too.
func TestQuietAcquisition(t *testing.T) {
	var r recorded
	ctx := locktrace.WithTrace(context.Background(), r.trace())
	a := Begin(ctx, nil, testID, true)
	a.Quiet()
	a.Done(nil, fmt.Errorf("%w: %w", recipes.ErrLocked, recipes.ErrQuiet), false)
	b := Begin(ctx, nil, testID, false)
	b.Quiet()
	b.Queued()
	b.Done(nil, fmt.Errorf("%w: %w", recipes.ErrNotAcquired, context.Canceled), false)
	require.Len(t, r.dones, 2)
	assert.True(t, r.dones[0].Quiet)
	assert.False(t, r.dones[0].Contended)
	assert.True(t, r.dones[1].Quiet)
	assert.True(t, r.dones[1].Contended)
	require.Len(t, r.queued, 1, "only the holder found is queued")
	assert.Equal(t, r.dones[1].ID, r.queued[0].ID)
	var untraced *Acquisition
	untraced.Quiet() // nil: does nothing
}

// With no trace anywhere, reporting costs no allocation: an acquisition
// and the holding's life cost what they cost before the hooks.
func TestUntracedAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	o := &owner{}
	impl := &deadlined{}
	var first Lease
	var h Holding[*deadlined]
	allocs := testing.AllocsPerRun(100, func() {
		a := Begin(ctx, nil, testID, false)
		a.Queued()
		h, first = Holding[*deadlined]{}, Lease{}
		h.Start(&first, ctx, o, 1, true, impl)
		a.Done(&first, nil, false)
		if err := first.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// BenchmarkHolding is one acquisition's reporting and one holding's life
// (no server): untraced, and traced with empty hooks.
func BenchmarkHolding(b *testing.B) {
	nop := &locktrace.Trace{
		AcquireStart: func(locktrace.AcquireStartInfo) {},
		AcquireDone:  func(locktrace.AcquireDoneInfo) {},
		LeaseEnd:     func(locktrace.LeaseEndInfo) {},
	}
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{
		{"untraced", context.Background()},
		{"traced", locktrace.WithTrace(context.Background(), nop)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			o, impl := &owner{}, &deadlined{}
			for b.Loop() {
				a := Begin(bc.ctx, nil, testID, false)
				_, first := New(bc.ctx, o, 1, true, impl)
				a.Done(first, nil, false)
				if err := first.Release(bc.ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
