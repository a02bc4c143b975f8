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
// (Reentrant is skipped), and small contention numbers.
func TestRunMinimalBackend(t *testing.T) {
	b := newMemServer(faults{}).backend()
	b.Leftovers, b.Reentrant = nil, false
	b.Contenders, b.Rounds = 2, 3
	Run(t, b)
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
