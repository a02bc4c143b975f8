// Package compattest is what the compat locks' tests share: the check that
// a holder cut off from its server is told before anyone else is granted
// the lock, with the margin measured, and a holder in a child process that
// the test can pause with SIGSTOP. It is test support, not API.
package compattest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// WaitLimit bounds every wait; nothing asserts on durations but margins.
const WaitLimit = 60 * time.Second

// Ctx is a context bounded by WaitLimit, cancelled at t's cleanup.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), WaitLimit)
	t.Cleanup(cancel)
	return ctx
}

// moment records when something happened, once.
type moment struct {
	mu sync.Mutex
	at time.Time
}

func (m *moment) mark() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at.IsZero() {
		m.at = time.Now()
	}
}

func (m *moment) get() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.at
}

// HolderToldFirst takes the lock with holder, queues successor behind it,
// runs cut (which cuts the holder off from its server: a blackhole), and
// checks that the holder's lease ended at least want before successor was
// granted the lock. It returns the measured margin.
func HolderToldFirst(t *testing.T, holder, successor recipes.Locker, cut func(), want time.Duration) time.Duration {
	t.Helper()
	ctx := Ctx(t)
	lease, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	var told moment
	context.AfterFunc(lease.Context(), told.mark)
	type grant struct {
		lease recipes.Lease
		at    time.Time
		err   error
	}
	next := make(chan grant, 1)
	go func() {
		l, err := successor.Acquire(ctx)
		next <- grant{l, time.Now(), err}
	}()
	time.Sleep(100 * time.Millisecond) // let it queue
	cut()
	var g grant
	select {
	case g = <-next:
	case <-time.After(WaitLimit):
		t.Fatal("the successor never acquired")
	}
	if g.err != nil {
		t.Fatalf("successor: %v", g.err)
	}
	defer func() { _ = g.lease.Release(context.Background()) }()
	at := told.get()
	if at.IsZero() {
		t.Fatal("the successor was granted the lock while the holder's lease was live")
	}
	margin := g.at.Sub(at)
	t.Logf("holder told %v before the successor's grant (want at least %v); cause: %v",
		margin.Round(time.Millisecond), want, context.Cause(lease.Context()))
	if margin < want {
		t.Errorf("the holder was told %v before the successor's grant, want at least %v", margin, want)
	}
	if cause := context.Cause(lease.Context()); !errors.Is(cause, recipes.ErrLockLost) {
		t.Errorf("cause %v is not recipes.ErrLockLost", cause)
	}
	return margin
}
