package locktest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/recipes"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The suite passes on a correct lock.
func TestRunInMemory(t *testing.T) {
	Run(t, newMemServer(faults{}).backend())
}

// The suite runs with only what is required: no Leftovers, not reentrant
// (Reentrant is skipped, NotReentrant runs), and small contention numbers.
func TestRunMinimalBackend(t *testing.T) {
	b := newMemServer(faults{}).nonReentrantBackend()
	b.Leftovers = nil
	b.Contenders, b.Rounds = 2, 3
	Run(t, b)
}

// The suite runs on a backend with no fencing tokens, and catches one that
// claims to have none but gives numbers anyway, and one that gives none
// without saying so.
func TestRunWithoutTokens(t *testing.T) {
	s := newMemServer(faults{})
	s.noTokens = true
	Run(t, s.backend())

	liar := newMemServer(faults{fakeToken: true})
	liar.noTokens = true
	err := checkTokens(t.Context(), t, liar.backend(), "liar")
	require.ErrorContains(t, err, "on a backend with no tokens, want (0, false)")

	silent := newMemServer(faults{})
	silent.noTokens = true
	b := silent.backend()
	b.NoTokens = false
	err = checkTokens(t.Context(), t, b, "silent")
	require.ErrorContains(t, err, "says there is none")
}

// A lock that is not reentrant and waits for itself on re-entry is caught,
// and so is one that re-enters while claiming not to be reentrant.
func TestNotReentrantCheckCatchesSelfDeadlock(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err := checkNotReentrant(ctx, t, newMemServer(faults{reentryWaits: true}).nonReentrantBackend(), "self")
	require.ErrorContains(t, err, "which is not")
	t.Log(err)

	b := newMemServer(faults{}).backend()
	err = checkNotReentrant(t.Context(), t, b, "claims")
	require.ErrorContains(t, err, "took the lock")
	t.Log(err)
}

// Each check fails on a lock broken in the way it is there to catch.
func TestChecksCatchBrokenLocks(t *testing.T) {
	tests := []struct {
		name   string
		faults faults
		check  checkFunc
		// wait bounds the check; short where the check's only way to
		// fail is to wait for something that never comes.
		wait time.Duration
		want string // in the error
	}{
		{"no exclusion", faults{noExclusion: true}, checkExclusion, scenarioTimeout, "with a live lease"},
		{"TryAcquire without exclusion", faults{noExclusion: true}, checkTryAcquire, scenarioTimeout, "took the lock"},
		{"reentrant without exclusion", faults{noExclusion: true}, checkReentrant, scenarioTimeout, "took the lock"},
		{"tokens do not increase", faults{staticToken: true}, checkTokens, scenarioTimeout, "does not exceed"},
		{"token not above the lost holder's", faults{staticToken: true}, checkLoss, scenarioTimeout, "not above the lost lease's token"},
		{"second Release returns nil", faults{releaseTwiceNil: true}, checkReleaseTwice, scenarioTimeout, "second Release returned <nil>"},
		{"lease kept after loss", faults{keepLeaseOnLoss: true}, checkLoss, 300 * time.Millisecond, "Done channel did not close"},
		{"WithLock fn kept after loss", faults{keepLeaseOnLoss: true}, checkWithLock, 300 * time.Millisecond, "want an error that is"},
		{"waiter left behind on cancel", faults{leakWaiters: true}, checkCancelWhileWaiting, time.Second, "left on the server"},
		{"waiter ignores its context", faults{ignoreCancel: true}, checkCancelWhileWaiting, time.Second, "did not return before the wait ended"},
		{"Release leaves the lease live", faults{keepLeaseOnRelease: true}, checkReleaseTwice, scenarioTimeout, "Done channel is not closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), tt.wait)
			defer cancel()
			err := tt.check(ctx, t, newMemServer(tt.faults).backend(), "broken")
			require.Error(t, err)
			t.Log(err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// Each check passes on the correct lock when called alone, and leaves
// nothing behind.
func TestChecksPassAlone(t *testing.T) {
	for _, s := range scenarios {
		t.Run(s.title, func(t *testing.T) {
			b := newMemServer(faults{}).backend()
			if !s.runsOn(b) {
				b = newMemServer(faults{}).nonReentrantBackend()
			}
			ctx, cancel := context.WithTimeout(t.Context(), scenarioTimeout)
			defer cancel()
			require.NoError(t, s.check(ctx, t, b, "alone"))
			assert.Empty(t, b.Leftovers(t, "alone"))
		})
	}
}

func TestCheckLeftoversReportsWhatIsLeft(t *testing.T) {
	polls := 0
	b := Backend{Leftovers: func(*testing.T, string) []string { polls++; return []string{"/locks/x/_c_1-lock-0000000001"} }}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err := checkLeftovers(ctx, t, b, "x")
	require.ErrorContains(t, err, "_c_1-lock-0000000001")
	assert.Greater(t, polls, 1, "it polls before giving up")
}

func TestCheckLeftoversWaitsForAsynchronousCleanup(t *testing.T) {
	polls := 0
	b := Backend{Leftovers: func(*testing.T, string) []string {
		if polls++; polls < 3 {
			return []string{"node"}
		}
		return nil
	}}
	require.NoError(t, checkLeftovers(t.Context(), t, b, "x"))
	assert.Equal(t, 3, polls)
}

// A panic on bad input is reported as a violation, not a crash.
func TestBadInputPanicIsAnError(t *testing.T) {
	b := Backend{New: func(*testing.T, string) recipes.Locker { return panicker{} }}
	err := checkBadInput(t.Context(), t, b, "panic")
	require.ErrorContains(t, err, "Acquire(nil context) panicked")
}

type panicker struct{}

func (panicker) Acquire(context.Context) (recipes.Lease, error)    { panic("nil ctx") }
func (panicker) TryAcquire(context.Context) (recipes.Lease, error) { panic("nil ctx") }

// Acquire must never return (nil, nil).
func TestNilLeaseWithoutErrorIsAViolation(t *testing.T) {
	_, err := take(t.Context(), "Acquire", func(context.Context) (recipes.Lease, error) { return nil, nil })
	require.ErrorContains(t, err, "returned (nil, nil)")
	err = refuse(t.Context(), "TryAcquire", func(context.Context) (recipes.Lease, error) { return nil, nil }, recipes.ErrLocked)
	require.ErrorContains(t, err, "returned (nil, nil)")
}

func TestLockNamesAreUnique(t *testing.T) {
	a, b := lockName("excl"), lockName("excl")
	assert.NotEqual(t, a, b)
	assert.Regexp(t, `^excl-\d+$`, a)
}

// The suite passes on a correct shared lock (the read half of an in-memory
// read/write lock, its write half as Blocker).
func TestRunSharedInMemory(t *testing.T) {
	Run(t, newMemServer(faults{}).sharedBackend())
}

// A Shared backend runs with only what is required, and with a single
// contender the sharing check still has two sharers to overlap.
func TestRunSharedMinimalBackend(t *testing.T) {
	s := newMemServer(faults{})
	s.nonReentrant = true
	b := s.sharedBackend()
	b.Leftovers = nil
	b.Contenders, b.Rounds = 1, 3
	Run(t, b)
}

func TestBackendValidation(t *testing.T) {
	good := newMemServer(faults{}).backend()
	require.NoError(t, good.validate())
	require.NoError(t, newMemServer(faults{}).sharedBackend().validate())

	noBlocker := newMemServer(faults{}).sharedBackend()
	noBlocker.Blocker = nil
	assert.ErrorContains(t, noBlocker.validate(), "Blocker is required")

	stray := newMemServer(faults{}).sharedBackend()
	stray.Shared = false
	assert.ErrorContains(t, stray.validate(), "Shared is not")

	noNew := good
	noNew.New = nil
	assert.ErrorContains(t, noNew.validate(), "New is required")
	noLose := good
	noLose.Lose = nil
	assert.ErrorContains(t, noLose.validate(), "Lose is required")
	negative := good
	negative.Rounds = -1
	assert.ErrorContains(t, negative.validate(), "must not be negative")
}

// Each check fails on a shared lock broken in the way it is there to catch.
func TestSharedChecksCatchBrokenLocks(t *testing.T) {
	tests := []struct {
		name   string
		faults faults
		check  checkFunc
		wait   time.Duration // bounds the check, as in TestChecksCatchBrokenLocks
		want   string        // in the error
	}{
		// Sharers that exclude each other.
		{"sharers never overlap", faults{readersExclude: true}, checkExclusion, scenarioTimeout, "never held the lock at the same time"},
		{"TryAcquire refused on a shared lock", faults{readersExclude: true}, checkTryAcquire, scenarioTimeout,
			"TryAcquire by a sharer on a lock another sharer holds"},
		{"goroutines sharing a sharer exclude each other", faults{readersExclude: true}, checkReentrant, time.Second,
			"did not hold it together"},
		// A Blocker that does not exclude sharers.
		{"Blocker overlaps sharers", faults{writerShares: true}, checkExclusion, scenarioTimeout, "held it with a live lease"},
		{"TryAcquire past a Blocker", faults{writerShares: true}, checkTryAcquire, scenarioTimeout,
			"TryAcquire #1 by a sharer on a lock a Blocker holds took the lock"},
		{"waiter never waits behind a Blocker", faults{writerShares: true}, checkCancelWhileWaiting, scenarioTimeout, "took the lock"},
		{"WithLock lets a Blocker in", faults{writerShares: true}, checkWithLock, scenarioTimeout,
			"TryAcquire by a Blocker while fn runs took the lock"},
		{"Blocker in past a re-entered sharer", faults{writerShares: true}, checkReentrant, scenarioTimeout,
			"TryAcquire by a Blocker while re-entered took the lock"},
		// Other breakages, seen through a sharer.
		{"re-entry waits behind a queued Blocker", faults{noReadReentry: true}, checkReentrant, time.Second,
			"Acquire(lease.Context()) on the holding Locker did not return"},
		{"tokens do not increase", faults{staticToken: true}, checkTokens, scenarioTimeout, "the Blocker after sharer 0, round 0"},
		{"token not above the lost sharer's", faults{staticToken: true}, checkLoss, scenarioTimeout, "not above the lost lease's token"},
		{"share kept after loss", faults{keepLeaseOnLoss: true}, checkLoss, 300 * time.Millisecond, "Done channel did not close"},
		{"waiter ignores its context", faults{ignoreCancel: true}, checkCancelWhileWaiting, time.Second, "did not return before the wait ended"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), tt.wait)
			defer cancel()
			err := tt.check(ctx, t, newMemServer(tt.faults).sharedBackend(), "broken")
			require.Error(t, err)
			t.Log(err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// Each check passes on the correct shared lock when called alone, and
// leaves nothing behind.
func TestSharedChecksPassAlone(t *testing.T) {
	for _, s := range scenarios {
		t.Run(s.title, func(t *testing.T) {
			b := newMemServer(faults{}).sharedBackend()
			if !s.runsOn(b) {
				srv := newMemServer(faults{})
				srv.nonReentrant = true
				b = srv.sharedBackend()
			}
			ctx, cancel := context.WithTimeout(t.Context(), scenarioTimeout)
			defer cancel()
			require.NoError(t, s.check(ctx, t, b, "alone"))
			assert.Empty(t, b.Leftovers(t, "alone"))
		})
	}
}
