// Package zktest is what the recipe packages' tests share: one standalone
// ZooKeeper per test binary, a TestMain that checks for goroutine leaks and
// stops that server, and small helpers. It is test support, not API.
package zktest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"go.uber.org/goleak"
)

// WaitLimit bounds every wait in the tests; nothing asserts on durations.
const WaitLimit = 60 * time.Second

var shared struct {
	once sync.Once
	zk   *harness.ZK
	err  error
}

// Shared returns the servers of the test binary's standalone ZooKeeper,
// started on first use (tests that stop or break a server start their own
// with harness.StartZK).
func Shared(t testing.TB) []string {
	t.Helper()
	shared.once.Do(func() { shared.zk, shared.err = harness.LaunchZK(1) })
	if shared.err != nil {
		harness.Unavailable(t, "zookeeper: %v", shared.err)
	}
	return shared.zk.Servers()
}

// SharedForExample is Shared for Example functions, which have no
// testing.TB: it panics when no server can be had.
func SharedForExample() []string {
	shared.once.Do(func() { shared.zk, shared.err = harness.LaunchZK(1) })
	if shared.err != nil {
		panic(shared.err)
	}
	return shared.zk.Servers()
}

type closingM struct{ m *testing.M }

func (c closingM) Run() int {
	code := c.m.Run()
	if shared.zk != nil {
		_ = shared.zk.Close()
	}
	return code
}

// Main runs the tests, stops the shared server, checks for leaked
// goroutines and exits: call it from TestMain.
func Main(m *testing.M) {
	goleak.VerifyTestMain(closingM{m})
	os.Exit(0) // not reached: VerifyTestMain exits
}

// Connect opens a session client, quiet, closed at t's cleanup.
func Connect(t testing.TB, servers []string, opts ...session.Option) *session.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitLimit)
	defer cancel()
	c, err := session.Connect(ctx, servers, append([]session.Option{session.WithLogger(nil)}, opts...)...)
	if err != nil {
		t.Fatalf("connect to %v: %v", servers, err)
	}
	t.Cleanup(c.Close)
	return c
}

// Ctx is a context bounded by WaitLimit, cancelled at t's cleanup.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), WaitLimit)
	t.Cleanup(cancel)
	return ctx
}

// AcquireAcrossCut runs acquire while p cuts the connection (the caller has
// set the fault, e.g. p.ResetAfter), waits until states reports Suspended,
// restores p, and returns the lease once acquire succeeds (bounded by
// WaitLimit).
func AcquireAcrossCut(t *testing.T, p *harness.Proxy, states <-chan session.StateChange,
	acquire func(context.Context) (recipes.Lease, error)) recipes.Lease {
	t.Helper()
	type result struct {
		lease recipes.Lease
		err   error
	}
	res := make(chan result, 1)
	ctx := Ctx(t)
	go func() {
		l, err := acquire(ctx)
		res <- result{l, err}
	}()
	timeout := time.After(WaitLimit)
	for suspended := false; !suspended; {
		select {
		case ch := <-states:
			suspended = ch.State == session.Suspended
		case <-timeout:
			t.Fatalf("no Suspended within %v", WaitLimit)
		}
	}
	p.Restore(t)
	select {
	case r := <-res:
		if r.err != nil {
			t.Fatalf("Acquire across the cut: %v", r.err)
		}
		return r.lease
	case <-time.After(WaitLimit):
		t.Fatal("Acquire did not return after the connection came back")
		return nil
	}
}

// EachPolicyThroughProxy runs f as one subtest per session error policy,
// each with a fresh proxy to server, a client of that policy connected
// through it (session timeout 20s) and the client's state changes.
func EachPolicyThroughProxy(t *testing.T, server string, f func(t *testing.T, p *harness.Proxy,
	c *session.Client, states <-chan session.StateChange, policy session.ErrorPolicy)) {
	t.Helper()
	for _, policy := range []session.ErrorPolicy{session.SuspendedIsLost, session.OnlyLostIsLost} {
		t.Run(fmt.Sprint("policy ", policy), func(t *testing.T) {
			p := harness.NewProxy(t, server)
			c := Connect(t, []string{p.Addr()}, session.WithSessionTimeout(20*time.Second), session.WithErrorPolicy(policy))
			states, err := c.Subscribe(Ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			f(t, p, c, states, policy)
		})
	}
}

// Token is lease's fencing token; every ZooKeeper lease has one, and t
// fails if it says otherwise.
func Token(t testing.TB, lease recipes.Lease) int64 {
	t.Helper()
	token, ok := lease.Token()
	if !ok {
		t.Fatalf("lease %v has no fencing token", lease)
	}
	return token
}

// contextWithLimit is a context bounded by WaitLimit.
func contextWithLimit() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), WaitLimit)
}
