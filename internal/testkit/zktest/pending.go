package zktest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// StillWaiting is how long a waiter is watched to see that it does not get
// a lock while another holds it: a bounded look, not a timing assertion.
const StillWaiting = 300 * time.Millisecond

// Pending is an Acquire running on a goroutine of its own.
type Pending struct{ res chan acquired }

type acquired struct {
	lease recipes.Lease
	err   error
}

// AcquireAsync runs acquire on a goroutine. acquire must end by itself
// (its context ends at the test's cleanup), so that the goroutine cannot
// outlive the test.
func AcquireAsync(acquire func() (recipes.Lease, error)) *Pending {
	p := &Pending{res: make(chan acquired, 1)}
	go func() {
		l, err := acquire()
		p.res <- acquired{l, err}
	}()
	return p
}

// Acquired waits, at most WaitLimit, for the Acquire to succeed and returns
// its lease.
func (p *Pending) Acquired(t testing.TB, what string) recipes.Lease {
	t.Helper()
	select {
	case r := <-p.res:
		require.NoError(t, r.err, what)
		return r.lease
	case <-time.After(WaitLimit):
		t.Fatalf("%s: not acquired within %v", what, WaitLimit)
		return nil
	}
}

// Waiting checks, for StillWaiting, that the Acquire has not returned.
func (p *Pending) Waiting(t testing.TB, what string) {
	t.Helper()
	select {
	case r := <-p.res:
		t.Fatalf("%s: Acquire returned (lease %v, err %v) while the lock is held elsewhere", what, r.lease, r.err)
	case <-time.After(StillWaiting):
	}
}

// Failed waits, at most WaitLimit, for the Acquire to fail with an error
// that is want (errors.Is).
func (p *Pending) Failed(t testing.TB, want error, what string) {
	t.Helper()
	select {
	case r := <-p.res:
		require.ErrorIs(t, r.err, want, what)
	case <-time.After(WaitLimit):
		t.Fatalf("%s: Acquire did not return within %v", what, WaitLimit)
	}
}
