package znode_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// goneResult is what WaitGone returned.
type goneResult struct {
	gone znode.Gone
	err  error
}

// waitGoneAsync runs p.WaitGone in a goroutine that ends by t's cleanup
// at the latest (ctx is zktest.Ctx's).
func waitGoneAsync(ctx context.Context, p znode.Participant, c *session.Client) <-chan goneResult {
	out := make(chan goneResult, 1)
	go func() {
		g, err := p.WaitGone(ctx, c)
		out <- goneResult{g, err}
	}()
	return out
}

// requireStillThere checks that WaitGone has not returned: after a read
// of the node by another client, so that a WaitGone about to return has
// had its chance (it cannot prove a negative; see TestWaitGone's use).
func requireStillThere(t *testing.T, res <-chan goneResult) {
	t.Helper()
	select {
	case r := <-res:
		t.Fatalf("WaitGone returned while the node is there: %+v, %v", r.gone, r.err)
	default:
	}
}

func awaitGone(t *testing.T, res <-chan goneResult) goneResult {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(zktest.WaitLimit):
		t.Fatal("WaitGone did not return")
		return goneResult{}
	}
}

// holdAndList takes the mutex at path with hc and lists it from wc: the
// lease, and the holder as wc sees it, with wc's mutex.
func holdAndList(t *testing.T, hc, wc *session.Client, path string) (recipes.Lease, znode.Participant, *mutex.Mutex) {
	t.Helper()
	hm, err := mutex.New(hc, path)
	require.NoError(t, err)
	lease, err := hm.Acquire(zktest.Ctx(t))
	require.NoError(t, err)
	wm, err := mutex.New(wc, path)
	require.NoError(t, err)
	return lease, holderOf(t, wm), wm
}

// holderOf lists m's queue from c and returns its one holder.
func holderOf(t *testing.T, m *mutex.Mutex) znode.Participant {
	t.Helper()
	ps, err := m.Participants(zktest.Ctx(t))
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.True(t, ps[0].Holder)
	return ps[0]
}

// TestWaitGone: a holder's node watched from another client is reported
// gone when the holder releases, and not before; a data change (a
// revocation request) does not end the wait.
func TestWaitGone(t *testing.T) {
	servers := zktest.Shared(t)
	hc, wc := zktest.Connect(t, servers), zktest.Connect(t, servers)
	lease, p, wm := holdAndList(t, hc, wc, "/gone/released")

	res := waitGoneAsync(zktest.Ctx(t), p, wc)
	require.NoError(t, znode.Revoke(zktest.Ctx(t), wc, p.Path)) // its data changes
	holderOf(t, wm)
	requireStillThere(t, res)

	require.NoError(t, lease.Release(zktest.Ctx(t)))
	r := awaitGone(t, res)
	require.NoError(t, r.err)
	require.Equal(t, znode.Gone{}, r.gone, "deleted")
}

// TestWaitGoneReplaced: the exclusive lock's node, one path for every
// holder, taken by another session before the wait began, is reported
// replaced, with its new owner.
func TestWaitGoneReplaced(t *testing.T) {
	servers := zktest.Shared(t)
	c1, c2, wc := zktest.Connect(t, servers), zktest.Connect(t, servers), zktest.Connect(t, servers)
	l1, err := exclusive.New(c1, "/gone/replaced")
	require.NoError(t, err)
	lease1, err := l1.Acquire(zktest.Ctx(t))
	require.NoError(t, err)
	zl1 := lease1.(znode.Lease)
	p := znode.Participant{Path: zl1.Node(), SessionID: zl1.SessionID()}
	require.NoError(t, lease1.Release(zktest.Ctx(t)))
	l2, err := exclusive.New(c2, "/gone/replaced")
	require.NoError(t, err)
	lease2, err := l2.Acquire(zktest.Ctx(t))
	require.NoError(t, err)
	defer func() { require.NoError(t, lease2.Release(zktest.Ctx(t))) }()
	require.Equal(t, zl1.Node(), lease2.(znode.Lease).Node(), "one path for every holder")

	g, err := p.WaitGone(zktest.Ctx(t), wc)
	require.NoError(t, err)
	require.Equal(t, znode.Gone{Replaced: true, Owner: lease2.(znode.Lease).SessionID()}, g)
}

// TestWaitGoneAcrossSessionLoss: the watcher's session is lost (its
// connection blackholed past the session timeout) while the holder
// releases; once connected again, under a new session, the watcher reads
// the node anew and reports it gone, with no error.
func TestWaitGoneAcrossSessionLoss(t *testing.T) {
	servers := zktest.Shared(t)
	hc := zktest.Connect(t, servers)
	proxy := harness.NewProxy(t, servers[0])
	wc := zktest.Connect(t, []string{proxy.Addr()}, session.WithSessionTimeout(2*time.Second))
	states, err := wc.Subscribe(zktest.Ctx(t))
	require.NoError(t, err)
	lease, p, _ := holdAndList(t, hc, wc, "/gone/session-loss")
	first := wc.CurrentSession().ID()
	res := waitGoneAsync(zktest.Ctx(t), p, wc)

	proxy.Blackhole(t)
	require.NoError(t, lease.Release(zktest.Ctx(t)))
	awaitState(t, states, session.Lost)
	requireStillThere(t, res) // not seen gone: not reported gone
	proxy.Restore(t)
	r := awaitGone(t, res)
	require.NoError(t, r.err)
	require.Equal(t, znode.Gone{}, r.gone)
	require.NotEqual(t, first, wc.CurrentSession().ID(), "seen under a new session")
}

// TestWaitGoneThroughOutage: a read that fails because the watcher's
// connection is down (a client that does not retry, so that the failure
// reaches WaitGone) does not end the wait: it reads again until the
// connection is back, and then reports the node gone; whether the
// connection came back within the session (Suspended) or the session was
// lost meanwhile (Lost, a new session after).
func TestWaitGoneThroughOutage(t *testing.T) {
	for _, until := range []session.State{session.Suspended, session.Lost} {
		t.Run(until.String(), func(t *testing.T) {
			servers := zktest.Shared(t)
			hc := zktest.Connect(t, servers)
			proxy := harness.NewProxy(t, servers[0])
			wc := zktest.Connect(t, []string{proxy.Addr()}, session.WithSessionTimeout(3*time.Second),
				session.WithRetryPolicy(session.NoRetry{}))
			states, err := wc.Subscribe(zktest.Ctx(t))
			require.NoError(t, err)
			lockPath := "/gone/outage-" + until.String()
			lease, p, _ := holdAndList(t, hc, wc, lockPath)

			proxy.Blackhole(t)
			res := waitGoneAsync(zktest.Ctx(t), p, wc) // its first read is lost
			require.NoError(t, lease.Release(zktest.Ctx(t)))
			awaitState(t, states, until)
			requireStillThere(t, res)
			proxy.Restore(t)
			r := awaitGone(t, res)
			require.NoError(t, r.err)
			require.Equal(t, znode.Gone{}, r.gone)
		})
	}
}

// awaitState reads states until want.
func awaitState(t *testing.T, states <-chan session.StateChange, want session.State) {
	t.Helper()
	timeout := time.After(zktest.WaitLimit)
	for {
		select {
		case ch := <-states:
			if ch.State == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %v within %v", want, zktest.WaitLimit)
		}
	}
}

// TestWaitGoneEnds: a cancelled context ends the wait with its error and
// cause; bad input is an error before anything is sent.
func TestWaitGoneEnds(t *testing.T) {
	servers := zktest.Shared(t)
	c := zktest.Connect(t, servers)
	m, err := mutex.New(c, "/gone/ends")
	require.NoError(t, err)
	lease, err := m.Acquire(zktest.Ctx(t))
	require.NoError(t, err)
	defer func() { require.NoError(t, lease.Release(zktest.Ctx(t))) }()
	p := holderOf(t, m)

	ctx, cancel := context.WithCancelCause(zktest.Ctx(t))
	res := waitGoneAsync(ctx, p, c)
	holderOf(t, m)
	requireStillThere(t, res)
	stop := errorString("stop watching")
	cancel(stop)
	r := awaitGone(t, res)
	require.ErrorIs(t, r.err, context.Canceled)
	require.ErrorIs(t, r.err, stop)

	_, err = znode.Participant{}.WaitGone(zktest.Ctx(t), c)
	require.ErrorIs(t, err, recipes.ErrInvalidArgument)
	require.ErrorContains(t, err, "no Path")
	_, err = p.WaitGone(zktest.Ctx(t), nil)
	require.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = p.WaitGone(nil, c) //lint:ignore SA1012 a nil context is the bad input under test
	require.ErrorIs(t, err, recipes.ErrInvalidArgument)
}

type errorString string

func (e errorString) Error() string { return string(e) }
