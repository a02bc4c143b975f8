package memcachedlock_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// withServer are the options of a lock on m with TTL d.
func withServer(m *harness.Memcached, d time.Duration) []any {
	return []any{memcachedlock.WithServerAddr(m.Addr()), memcachedlock.WithTTL(d)}
}

// stalled is a client whose compare-and-swaps (renewals and releases) hang
// until open: a holder that cannot renew (a paused process, a one-way
// partition), while its lease counts down.
type stalled struct {
	*memcache.Client
	gate chan struct{}
	once sync.Once
}

// newStalled returns a stalled client of addr; t's cleanup opens it.
func newStalled(t testing.TB, addr string) *stalled {
	s := &stalled{Client: client(t, addr), gate: make(chan struct{})}
	t.Cleanup(s.open)
	return s
}

func (s *stalled) CompareAndSwap(it *memcache.Item) error {
	if !strings.HasSuffix(it.Key, ":alive") { // the marker's dating is no renewal
		<-s.gate
	}
	return s.Client.CompareAndSwap(it)
}

// open lets the stalled calls go on, to the server.
func (s *stalled) open() { s.once.Do(func() { close(s.gate) }) }

// grant is what a waiter's Acquire gave, and whether the first holder's
// lease had ended by then.
type grant struct {
	lease     recipes.Lease
	err       error
	at        time.Time
	firstDone bool
}

// acquireBehind starts l.Acquire(ctx) and reports its grant, with whether
// first's lease had ended when it was granted.
func acquireBehind(ctx context.Context, l recipes.Locker, first recipes.Lease) <-chan grant {
	out := make(chan grant, 1)
	go func() {
		lease, err := l.Acquire(ctx)
		g := grant{lease: lease, err: err, at: time.Now()}
		select {
		case <-first.Done():
			g.firstDone = true
		default:
		}
		out <- g
	}()
	return out
}

// await waits, for waitLimit at most, for what ch gives (or its close),
// and fails t, naming what, if nothing comes.
func await[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("waited %v for %s", waitLimit, what)
		panic("unreachable")
	}
}

// writeOthers writes n items of other keys, so that the server's CAS
// counter moves on, as on a server that serves more than the lock.
func writeOthers(t testing.TB, admin *memcache.Client, n int) {
	t.Helper()
	for i := range n {
		if err := admin.Set(&memcache.Item{Key: fmt.Sprintf("other-%d", i), Value: []byte("x")}); err != nil {
			t.Fatalf("write other keys: %v", err)
		}
	}
}

// tryUntil polls l.TryAcquire until it succeeds or limit passes.
func tryUntil(ctx context.Context, l recipes.Locker, limit time.Duration) (recipes.Lease, error) {
	deadline := time.Now().Add(limit)
	for {
		lease, err := l.TryAcquire(ctx)
		if err == nil || !time.Now().Before(deadline) {
			return lease, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitBackground waits at t's end, before the servers started so far
// stop (call it after starting them: clean-ups run last first), until the
// lock's work in the background (a release going on, the clean-up of an
// abandoned add) has ended, bounded; else it would go on against a stopped
// server until the lock expired, and goleak, which checks the package at
// its end, would find it.
func awaitBackground(t *testing.T) {
	t.Cleanup(func() {
		buf := make([]byte, 1<<20)
		for deadline := time.Now().Add(waitLimit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			n := runtime.Stack(buf, true)
			if !bytes.Contains(buf[:n], []byte("zkrecipes/compat/internal/ttl.")) &&
				!bytes.Contains(buf[:n], []byte("zkrecipes/compat/memcachedlock.")) {
				return
			}
		}
		t.Errorf("the lock's background work still runs after %v", waitLimit)
	})
}
