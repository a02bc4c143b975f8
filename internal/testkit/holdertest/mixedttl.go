package holdertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// MixedTTLs checks that clients of one lock with different TTLs never
// make two holders with live leases: releaser (a short TTL) holds the
// lock; waiter (a long TTL) waits for it and is granted it at the release;
// contender (the short TTL again) then tries for it while waiter holds it
// for hold, which should be several of the short TTLs: a grant made with
// the releaser's TTL (to a waiter that trusts its lease for its own,
// longer one) would have expired on the server by then, and gone to the
// contender. The contender must be granted the lock only once waiter
// released it, and waiter's lease must stay live until then.
func MixedTTLs(t *testing.T, releaser, waiter, contender recipes.Locker, hold time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*WaitLimit)
	defer cancel()
	first, err := releaser.Acquire(ctx)
	if err != nil {
		t.Fatalf("releaser: %v", err)
	}
	waiting := acquireInBackground(ctx, waiter)
	defer waiting.releaseAfter(cancel)
	waiting.awaitQueued(t, "the waiter")
	if err := first.Release(ctx); err != nil {
		t.Fatalf("releaser: release: %v", err)
	}
	held := waiting.awaitLease(t, "the waiter")
	contending := acquireInBackground(ctx, contender)
	defer contending.releaseAfter(cancel)
	contending.awaitQueued(t, "the contender")
	timer := time.NewTimer(hold)
	defer timer.Stop()
	select {
	case <-contending.done:
		t.Fatalf("the contender (short TTL) was granted the lock (err %v) while the waiter (long TTL) held it with a live lease", contending.err)
	case <-held.Done():
		t.Fatalf("the waiter's lease (long TTL) ended while it held the lock: %v", context.Cause(held.Context()))
	case <-timer.C:
	}
	if err := held.Release(ctx); err != nil {
		t.Fatalf("waiter: release: %v", err)
	}
	next := contending.awaitLease(t, "the contender")
	if err := next.Release(ctx); err != nil {
		t.Errorf("contender: release: %v", err)
	}
}

// backgroundAcquire is an Acquire run in the background, with word of
// when it found the lock held.
type backgroundAcquire struct {
	queued chan struct{} // closed when the acquisition found the lock held
	done   chan struct{} // closed when Acquire returned, with:
	lease  recipes.Lease
	err    error
}

// acquireInBackground starts l.Acquire(ctx) in the background.
func acquireInBackground(ctx context.Context, l recipes.Locker) *backgroundAcquire {
	a := &backgroundAcquire{queued: make(chan struct{}), done: make(chan struct{})}
	var once sync.Once
	ctx = locktrace.WithTrace(ctx, &locktrace.Trace{AcquireQueued: func(locktrace.AcquireQueuedInfo) {
		once.Do(func() { close(a.queued) })
	}})
	go func() {
		defer close(a.done)
		a.lease, a.err = l.Acquire(ctx)
	}()
	return a
}

// awaitQueued waits (bounded) until the acquisition found the lock held;
// t fails when it returned first or never did.
func (a *backgroundAcquire) awaitQueued(t *testing.T, who string) {
	t.Helper()
	select {
	case <-a.queued:
	case <-a.done:
		t.Fatalf("%s did not wait: err %v", who, a.err)
	case <-time.After(WaitLimit):
		t.Fatalf("%s never found the lock held", who)
	}
}

// awaitLease waits (bounded) for the lease; t fails without one.
func (a *backgroundAcquire) awaitLease(t *testing.T, who string) recipes.Lease {
	t.Helper()
	select {
	case <-a.done:
	case <-time.After(WaitLimit):
		t.Fatalf("%s was never granted the lock", who)
	}
	if a.err != nil {
		t.Fatalf("%s: %v", who, a.err)
	}
	return a.lease
}

// releaseAfter ends the acquisition with cancel, waits for it, and
// releases what it got (a release already made fails harmlessly).
func (a *backgroundAcquire) releaseAfter(cancel context.CancelFunc) {
	cancel()
	<-a.done
	if a.lease != nil {
		_ = a.lease.Release(context.Background())
	}
}
