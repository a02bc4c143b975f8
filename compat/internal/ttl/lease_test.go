package ttl

import (
	"context"
	"crypto/x509"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeServer answers renewals with renew (or blocks while block is set).
type fakeServer struct {
	mu      sync.Mutex
	renew   error
	block   chan struct{} // renewals wait on it, or their ctx
	renews  atomic.Int32
	frees   atomic.Int32
	freeErr error
	fails   atomic.Int32 // Frees still to fail with a transient error
	flaky   atomic.Int32 // Renewals still to fail with a transient error
}

func (f *fakeServer) Renew(ctx context.Context) error {
	f.renews.Add(1)
	if f.flaky.Add(-1) >= 0 {
		return errors.New("TRYAGAIN Multiple keys request during rehashing of slot")
	}
	f.mu.Lock()
	err, block := f.renew, f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

func (f *fakeServer) Free(ctx context.Context) error {
	f.frees.Add(1)
	if err := ctx.Err(); err != nil {
		return err // as a client does with an ended context
	}
	if f.fails.Add(-1) >= 0 {
		return errors.New("connection reset")
	}
	return f.freeErr
}

type owner struct{ _ int }

func holdLease(t *testing.T, f *fakeServer, valid, every time.Duration) *hold.Lease {
	t.Helper()
	le, err := Hold(context.Background(), &owner{}, 1, true, time.Now(), Terms{TTL: valid + 200*time.Millisecond, Valid: valid, Every: every, What: "test lock"}, f, new(Pending))
	require.NoError(t, err)
	return le
}

func waitEnded(t *testing.T, le *hold.Lease) {
	t.Helper()
	select {
	case <-le.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lease did not end")
	}
}

func waitFrees(t *testing.T, f *fakeServer, n int32) {
	t.Helper()
	require.Eventually(t, func() bool { return f.frees.Load() >= n }, 10*time.Second, time.Millisecond)
}

// Renewals keep the lease alive past its first deadline.
func TestRenewalsKeepItAlive(t *testing.T) {
	f := &fakeServer{}
	// A deadline of 400ms renewed every 40ms, watched for 2.5 deadlines:
	// roomy enough for a loaded machine's scheduling delays.
	le := holdLease(t, f, 400*time.Millisecond, 40*time.Millisecond)
	time.Sleep(time.Second)
	assert.NoError(t, le.Err(), "renewed all along")
	assert.GreaterOrEqual(t, f.renews.Load(), int32(5))
	require.NoError(t, le.Release(context.Background()))
	assert.Equal(t, int32(1), f.frees.Load())
	n := f.renews.Load()
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, n, f.renews.Load(), "no renewal after Release")
}

// A silent server: the lease ends at its deadline, whatever the renewal
// is doing, and what is left is freed in the background.
func TestDeadlinePassesUnrenewed(t *testing.T) {
	f := &fakeServer{block: make(chan struct{})}
	start := time.Now()
	le := holdLease(t, f, 200*time.Millisecond, 50*time.Millisecond)
	waitEnded(t, le)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "not before its deadline")
	assert.ErrorIs(t, le.Err(), recipes.ErrLockLost)
	assert.Contains(t, le.Err().Error(), "no renewal confirmed")
	waitFrees(t, f, 1)
	assert.ErrorIs(t, le.Release(context.Background()), recipes.ErrLockLost)
}

// A renewal that finds the lock not ours, or fails for good, ends the
// lease at once.
func TestRenewalFailures(t *testing.T) {
	for _, err := range []error{ErrNotOurs, Permanent(errors.New("NOPERM no permission"))} {
		f := &fakeServer{renew: err}
		le := holdLease(t, f, time.Hour, 10*time.Millisecond)
		waitEnded(t, le)
		assert.ErrorIs(t, le.Err(), recipes.ErrLockLost)
		assert.ErrorIs(t, context.Cause(le.Context()), err)
		assert.Equal(t, int32(1), f.renews.Load(), "not tried again")
		waitFrees(t, f, 1)
	}
}

// A short failure of the server (a connection reset, a slot migration's
// TRYAGAIN) is tried again and does not end the lease; a failure that
// lasts ends it at its deadline, as a silent server does.
func TestTransientRenewalErrors(t *testing.T) {
	f := &fakeServer{}
	f.flaky.Store(4)
	le := holdLease(t, f, time.Hour, 10*time.Millisecond)
	require.Eventually(t, func() bool { return f.renews.Load() >= 6 }, 10*time.Second, time.Millisecond,
		"tried again after each failure, then renewed")
	assert.NoError(t, le.Err(), "a short failure is no loss")
	require.NoError(t, le.Release(context.Background()))

	f = &fakeServer{}
	f.flaky.Store(1 << 30)
	start := time.Now()
	le = holdLease(t, f, 300*time.Millisecond, 20*time.Millisecond)
	waitEnded(t, le)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "not before its deadline")
	assert.ErrorIs(t, le.Err(), recipes.ErrLockLost)
	assert.Equal(t, locktrace.EndTTLLapsed, locktrace.EndCauseOf(context.Cause(le.Context())), "lapsed, at its deadline")
	assert.Greater(t, f.renews.Load(), int32(2), "tried again until the deadline")
	waitFrees(t, f, 1)
}

// A lock taken too late (its request took longer than the validity) is not
// a lease, and is freed.
func TestTakenTooLate(t *testing.T) {
	f := &fakeServer{}
	_, err := Hold(context.Background(), &owner{}, 1, true, time.Now().Add(-time.Second),
		Terms{TTL: 2 * time.Second, Valid: 500 * time.Millisecond, Every: time.Second, What: "test lock"}, f, new(Pending))
	assert.ErrorIs(t, err, recipes.ErrNotAcquired)
	waitFrees(t, f, 1) // in the background: Acquire returns at once
}

// Release reports a lock that was no longer ours on the server as lost.
func TestReleaseNotOurs(t *testing.T) {
	f := &fakeServer{freeErr: ErrNotOurs}
	le := holdLease(t, f, time.Hour, time.Hour)
	assert.ErrorIs(t, le.Release(context.Background()), recipes.ErrLockLost)
}

// Release during a renewal that hangs cancels it and waits for it: no
// renewal runs after Release, and the lock is freed once.
func TestReleaseDuringARenewal(t *testing.T) {
	f := &fakeServer{block: make(chan struct{})}
	le := holdLease(t, f, time.Hour, 10*time.Millisecond)
	require.Eventually(t, func() bool { return f.renews.Load() == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, le.Release(context.Background()))
	assert.Equal(t, int32(1), f.frees.Load())
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, int32(1), f.renews.Load(), "no renewal after Release")
	assert.Equal(t, int32(1), f.frees.Load(), "freed once")
}

// A lease costs no goroutine while no renewal is due.
func TestNoGoroutinePerLease(t *testing.T) {
	f := &fakeServer{}
	before := runtime.NumGoroutine()
	leases := make([]*hold.Lease, 100)
	for i := range leases {
		leases[i] = holdLease(t, f, time.Hour, time.Hour)
	}
	assert.Less(t, runtime.NumGoroutine()-before, 10)
	for _, le := range leases {
		require.NoError(t, le.Release(context.Background()))
	}
	assert.Equal(t, int32(100), f.frees.Load())
}

// Leases held at once each end at their own deadline, whatever the order
// they were taken in.
func TestDeadlinesInOrder(t *testing.T) {
	valids := []time.Duration{300 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}
	start := time.Now()
	ended := make([]time.Duration, len(valids))
	var wg sync.WaitGroup
	for i, valid := range valids {
		le := holdLease(t, &fakeServer{block: make(chan struct{})}, valid, time.Hour)
		wg.Go(func() {
			select {
			case <-le.Done():
				ended[i] = time.Since(start)
			case <-time.After(10 * time.Second):
				t.Error("the lease did not end")
			}
			assert.ErrorIs(t, le.Release(context.Background()), recipes.ErrLockLost)
		})
	}
	wg.Wait()
	for i, valid := range valids {
		assert.GreaterOrEqual(t, ended[i], valid, "not before its deadline")
	}
	assert.Less(t, ended[1], ended[2])
	assert.Less(t, ended[2], ended[0])
}

// Acquire refuses a nil or ended context, re-enters a live holding of the
// owner, takes anew otherwise, and reports each call, and the holding's
// end, to the trace.
func TestAcquire(t *testing.T) {
	o := &owner{}
	var dones []locktrace.AcquireDoneInfo
	var ends []locktrace.LeaseEndInfo
	tr := &locktrace.Trace{
		AcquireDone: func(i locktrace.AcquireDoneInfo) { dones = append(dones, i) },
		LeaseEnd:    func(i locktrace.LeaseEndInfo) { ends = append(ends, i) },
	}
	id := locktrace.LockID{Backend: "test", Kind: "lock", Name: "l"}
	f := &fakeServer{}
	takes := 0
	take := func(a *hold.Acquisition) (recipes.Lease, error) {
		takes++
		a.Queued()
		return Hold(context.Background(), o, 7, true, time.Now(), NewTerms(time.Hour, time.Hour, "test lock"), f, new(Pending))
	}
	_, err := Acquire(nil, o, tr, id, false, take) //lint:ignore SA1012 a nil context is the bad input under test
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Acquire(ended, o, tr, id, false, take)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired)
	assert.Empty(t, dones, "no report of a call refused for bad input")

	first, err := Acquire(context.Background(), o, tr, id, false, take)
	require.NoError(t, err)
	again, err := Acquire(first.Context(), o, tr, id, true, take)
	require.NoError(t, err)
	other, err := Acquire(first.Context(), &owner{}, nil, id, false, func(*hold.Acquisition) (recipes.Lease, error) {
		return nil, recipes.ErrLocked
	})
	assert.ErrorIs(t, err, recipes.ErrLocked, "another owner's holding is not re-entered")
	assert.Nil(t, other, "no typed nil")
	assert.Equal(t, 1, takes, "re-entry takes nothing")
	require.Len(t, dones, 2)
	assert.Equal(t, locktrace.OutcomeAcquired, dones[0].Outcome)
	assert.True(t, dones[0].Contended)
	assert.False(t, dones[0].Reentered)
	assert.Equal(t, int64(7), dones[0].Token)
	assert.True(t, dones[1].Reentered)
	assert.True(t, dones[1].Try)

	require.NoError(t, again.Release(context.Background()))
	assert.Empty(t, ends, "the holding lasts while a lease of it does")
	require.NoError(t, first.Release(context.Background()))
	require.Len(t, ends, 1)
	assert.Equal(t, locktrace.EndReleased, ends[0].Cause)
	assert.Equal(t, id, ends[0].Lock)
	assert.False(t, ends[0].HasMargin, "no margin for a release")
	_, err = Acquire(first.Context(), o, tr, id, false, take)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired, "the released lease's context has ended")
	assert.Equal(t, int32(1), f.frees.Load())
}

// A Release that cannot complete (its context ended, a network error) goes
// on in the background, so the lock is not left held for its TTL; a
// permanent error ends it.
func TestReleaseGoesOnInTheBackground(t *testing.T) {
	f := &fakeServer{}
	f.fails.Store(2)
	le, err := Hold(context.Background(), &owner{}, 1, true, time.Now(), NewTerms(time.Hour, time.Hour, "test lock"), f, new(Pending))
	require.NoError(t, err)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	err = le.Release(ended)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "background")
	waitFrees(t, f, 4) // the cancelled one, two transient failures, then success
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, int32(4), f.frees.Load(), "no attempt after the success")

	p := &fakeServer{freeErr: Permanent(errors.New("client closed"))}
	le, err = Hold(context.Background(), &owner{}, 1, true, time.Now(), NewTerms(time.Hour, time.Hour, "test lock"), p, new(Pending))
	require.NoError(t, err)
	err = le.Release(context.Background())
	assert.ErrorIs(t, err, ErrPermanent)
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, int32(1), p.frees.Load(), "a permanent error is not retried")
}

// A renewal refused a certificate is tried again until the lease's
// deadline, not ended at once: the lease lives on if a renewal then
// succeeds (a connection of the pool that still works, a certificate put
// right), and lapses at its deadline if none does.
func TestRefusedRenewalsTriedUntilTheDeadline(t *testing.T) {
	refused := Refused(x509.UnknownAuthorityError{})
	f := &fakeServer{renew: refused}
	le := holdLease(t, f, time.Hour, 10*time.Millisecond)
	require.Eventually(t, func() bool { return f.renews.Load() >= 5 }, 10*time.Second, time.Millisecond, "tried again")
	assert.NoError(t, le.Err(), "not ended by a refused certificate")
	f.mu.Lock()
	f.renew = nil
	f.mu.Unlock()
	n := f.renews.Load()
	require.Eventually(t, func() bool { return f.renews.Load() >= n+3 }, 10*time.Second, time.Millisecond, "renewed again")
	assert.NoError(t, le.Err())
	require.NoError(t, le.Release(context.Background()))

	f = &fakeServer{renew: refused}
	start := time.Now()
	le = holdLease(t, f, 300*time.Millisecond, 20*time.Millisecond)
	waitEnded(t, le)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "not before its deadline")
	assert.Equal(t, locktrace.EndTTLLapsed, locktrace.EndCauseOf(context.Cause(le.Context())), "lapsed, at its deadline")
	assert.Greater(t, f.renews.Load(), int32(2), "tried again until the deadline")
	waitFrees(t, f, 1)
}

func TestIsNil(t *testing.T) {
	var typed *fakeServer
	var srv Server = typed
	assert.True(t, IsNil(nil))
	assert.True(t, IsNil(srv), "a typed nil")
	assert.False(t, IsNil(&fakeServer{}))
	assert.False(t, IsNil(3))
}
