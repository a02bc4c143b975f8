package engine

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// testWait bounds every wait of these tests: an engine that is right never
// comes near it, one that hangs fails the test instead of the run.
const testWait = 10 * time.Second

const (
	testLockPath = "/locks/m" // a queue's lock path
	testHerdPath = "/locks/x" // a Herd's parent
)

// fixture is one fake ZooKeeper with our client (conn) on it, and ctx
// bounded by testWait for the calls of the test.
type fixture struct {
	t    *testing.T
	srv  *fakeServer
	conn *fakeConn
	ctx  context.Context
}

// newFixture also checks, when the test ends, that none of the engine's
// goroutines (background clean-ups, abandoned creates) is left running.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	srv := newFakeServer()
	f := &fixture{t: t, srv: srv, conn: srv.Conn(), ctx: ctx}
	t.Cleanup(func() {
		cancel()
		waitNoEngineGoroutines(t)
	})
	return f
}

// mutex is the mutex's lock over c at testLockPath.
func (f *fixture) mutex(c *fakeConn) *Lock {
	return NewLock(c, "mutex", "mutex "+testLockPath, testLockPath, "lock-", []string{"lock-"}, LeaseDriver{Leases: 1, Kind: "lock-"}, nil)
}

// lookahead is the mutex's lock over c with its default lookahead: a
// waiter also watches the node two ahead.
func (f *fixture) lookahead(c *fakeConn) *Lock {
	return NewLock(c, "mutex", "mutex "+testLockPath, testLockPath, "lock-", []string{"lock-"}, LeaseDriver{Leases: 1, Kind: "lock-", Lookahead: true}, nil)
}

// herd is the exclusive lock over c at testHerdPath/lock.
func (f *fixture) herd(c *fakeConn) *Herd {
	return &Herd{Conn: c, What: "exclusive " + testHerdPath, Path: testHerdPath, Name: "lock"}
}

// put makes a queue node of the mutex as c's session would, bypassing the
// engine (another client's holder or waiter), and returns its path.
func (f *fixture) put(c *fakeConn) string {
	f.t.Helper()
	node, _, err := c.CreateWithZxid(f.ctx, protectedPath(testLockPath, "lock-"), nil, session.Ephemeral|session.PersistentSequential)
	require.NoError(f.t, err)
	return node
}

// queue returns the full paths of the nodes under testLockPath.
func (f *fixture) queue() []string {
	var out []string
	for _, n := range f.srv.Children(testLockPath) {
		out = append(out, testLockPath+"/"+n)
	}
	return out
}

// ownedBy returns the nodes under testLockPath of session id.
func (f *fixture) ownedBy(id int64) []string {
	var out []string
	for _, p := range f.queue() {
		if st, ok := f.srv.Stat(p); ok && st.EphemeralOwner == id {
			out = append(out, p)
		}
	}
	return out
}

// waitFor polls cond until it holds, failing the test after testWait.
func (f *fixture) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s; tree:\n%s", what, f.srv.describe())
		}
		time.Sleep(time.Millisecond)
	}
}

// locker is what Lock and Herd share.
type locker interface {
	Acquire(ctx context.Context, try bool) (recipes.Lease, error)
}

type acquireResult struct {
	lease recipes.Lease
	err   error
}

// acquireAsync runs Acquire on its own goroutine; receive its result with
// result.
func acquireAsync(ctx context.Context, l locker) <-chan acquireResult {
	ch := make(chan acquireResult, 1)
	go func() {
		le, err := l.Acquire(ctx, false)
		ch <- acquireResult{le, err}
	}()
	return ch
}

// result waits (bounded) for the outcome of acquireAsync.
func (f *fixture) result(ch <-chan acquireResult) acquireResult {
	f.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(testWait):
		f.t.Fatalf("Acquire did not return; tree:\n%s", f.srv.describe())
		return acquireResult{}
	}
}

// pending asserts that acquireAsync has not returned yet.
func (f *fixture) pending(ch <-chan acquireResult, why string) {
	f.t.Helper()
	select {
	case r := <-ch:
		f.t.Fatalf("Acquire returned (%v, %v) but %s", r.lease, r.err, why)
	default:
	}
}

// inOrder waits for first's lease while second still waits, releases it,
// then waits for second's: the lock goes to first, then to second. It
// returns both leases, second's still held.
func (f *fixture) inOrder(first, second <-chan acquireResult) (recipes.Lease, recipes.Lease) {
	f.t.Helper()
	r := f.result(first)
	require.NoError(f.t, r.err)
	f.pending(second, "the first in the queue holds the lock")
	f.release(r.lease)
	r2 := f.result(second)
	require.NoError(f.t, r2.err)
	return r.lease, r2.lease
}

// release releases le and requires success.
func (f *fixture) release(le recipes.Lease) {
	f.t.Helper()
	require.NoError(f.t, le.Release(f.ctx))
}

// nodeOf is the lock node of an engine lease.
func nodeOf(le recipes.Lease) string { return le.(*lease).Node() }

// waitDone waits (bounded) for done to close.
func (f *fixture) waitDone(done <-chan struct{}, what string) {
	f.t.Helper()
	select {
	case <-done:
	case <-time.After(testWait):
		f.t.Fatalf("timed out waiting for %s", what)
	}
}

// waitNoEngineGoroutines waits (bounded) until no goroutine but the
// caller's runs code of this package: background clean-ups have ended and
// nothing leaked. (TestMain's goleak check covers the whole run; this one
// pins a leak on the test that made it.)
func waitNoEngineGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for {
		left := engineGoroutines()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("engine goroutines still running:\n%s", strings.Join(left, "\n\n"))
		}
		time.Sleep(time.Millisecond)
	}
}

func engineGoroutines() []string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 { // the caller's
			continue
		}
		parent := strings.Contains(g, "engine.TestMain(") || strings.Contains(g, "testing.(*T).Run(") // the test's callers
		if strings.Contains(g, "zkrecipes/internal/engine.") && !parent {
			out = append(out, g)
		}
	}
	return out
}
