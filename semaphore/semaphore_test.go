package semaphore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/shared"
	"github.com/zkrecipes/zkrecipes/znode"
)

func newSemaphore(t testing.TB, c *session.Client, path string, max int) *semaphore.Semaphore {
	t.Helper()
	s, err := semaphore.New(c, path, max)
	require.NoError(t, err)
	return s
}

// leases counts the lease nodes under a semaphore's path.
func leases(t testing.TB, c *session.Client, path string) int {
	t.Helper()
	kids, _, err := c.Children(ctxT(t), path+"/leases")
	if err != nil {
		return 0
	}
	return len(kids)
}

// The semaphore mutex is a lock (not reentrant): the contract holds.
func TestMutexContract(t *testing.T) {
	servers := sharedServers(t)
	observer := connect(t, servers)
	var mu sync.Mutex
	proxies := map[int64]*harness.Proxy{}
	locktest.Run(t, locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker {
			p := harness.NewProxy(t, servers[0])
			c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second))
			s, err := c.Session(ctxT(t))
			require.NoError(t, err)
			mu.Lock()
			proxies[s.ID()] = p
			mu.Unlock()
			m, err := semaphore.NewMutex(c, "/semaphore-contract/"+name)
			require.NoError(t, err)
			return m
		},
		Lose: func(t *testing.T, name string, lease recipes.Lease) {
			mu.Lock()
			p := proxies[lease.(znode.Lease).SessionID()]
			mu.Unlock()
			p.Blackhole(t)
		},
		Leftovers: func(t *testing.T, name string) []string {
			var left []string
			for _, sub := range []string{"/leases", "/locks"} {
				kids, _, _ := observer.Children(ctxT(t), "/semaphore-contract/"+name+sub)
				left = append(left, kids...)
			}
			return left
		},
	})
}

// Under contention the leases never exceed the limit, and reach it.
func TestLimitHolds(t *testing.T) {
	servers := sharedServers(t)
	const path, max, clients, rounds = "/semaphore-limit", 3, 8, 15
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range clients {
		s := newSemaphore(t, connect(t, servers), path, max)
		wg.Go(func() {
			for range rounds {
				lease, err := s.Acquire(ctxT(t), 1)
				if !assert.NoError(t, err) {
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				assert.LessOrEqual(t, n, int32(max), "over the limit")
				time.Sleep(30 * time.Millisecond)
				inside.Add(-1)
				assert.NoError(t, lease.Release(ctxT(t)))
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(max), most.Load(), "the limit was reached")
	assert.Zero(t, leases(t, connect(t, servers), path))
}

// Two clients each want 3 of 4 leases: Curator's acquire(n) can leave each
// with 2, waiting for the other forever; here the first takes all 3 in one
// hold of the mutex, and the second gets its 3 once they are back.
func TestManyLeasesDoNotDeadlock(t *testing.T) {
	servers := sharedServers(t)
	const path = "/semaphore-many"
	ctx := ctxT(t)
	got := make(chan recipes.Lease, 2)
	for range 2 {
		s := newSemaphore(t, connect(t, servers), path, 4)
		go func() {
			lease, err := s.Acquire(ctx, 3)
			if assert.NoError(t, err) {
				got <- lease
			}
		}()
	}
	for range 2 {
		select {
		case lease := <-got:
			require.NoError(t, lease.Release(ctx))
		case <-time.After(waitLimit):
			t.Fatal("deadlock: neither client got its 3 leases")
		}
	}
}

// Leases lists the holders' nodes and, last, a waiter's, which are not
// holders.
func TestLeasesListsHoldersFirst(t *testing.T) {
	servers := sharedServers(t)
	const path = "/semaphore-leases"
	ctx := ctxT(t)
	s := newSemaphore(t, connect(t, servers), path, 2)
	held, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	waiter := newSemaphore(t, connect(t, servers), path, 2)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	waited := make(chan error, 1)
	go func() {
		_, err := waiter.Acquire(wctx, 1)
		waited <- err
	}()
	observer := connect(t, servers)
	require.Eventually(t, func() bool { return leases(t, observer, path) == 3 }, waitLimit, 10*time.Millisecond)
	ps, err := s.Leases(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 3)
	assert.Equal(t, []bool{true, true, false}, []bool{ps[0].Holder, ps[1].Holder, ps[2].Holder})
	assert.Less(t, ps[1].Seq, ps[2].Seq, "the waiter's node is last")
	cancel()
	require.ErrorIs(t, <-waited, recipes.ErrNotAcquired)
	require.NoError(t, held.Release(ctx))
}

// The maximum can come from a shared count; raising it wakes a waiter.
func TestSharedCount(t *testing.T) {
	servers := sharedServers(t)
	c := connect(t, servers)
	ctx := ctxT(t)
	count, err := shared.NewCount(c, "/semaphore-count/max", 1)
	require.NoError(t, err)
	s, err := semaphore.NewWithCount(c, "/semaphore-count/sem", count)
	require.NoError(t, err)
	first, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	_, err = s.TryAcquire(ctx, 1)
	require.ErrorIs(t, err, recipes.ErrLocked)

	second := make(chan recipes.Lease, 1)
	go func() {
		l, err := s.Acquire(ctx, 1)
		if assert.NoError(t, err) {
			second <- l
		}
	}()
	time.Sleep(200 * time.Millisecond)
	v, version, err := count.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	ok, err := count.TrySet(ctx, 2, version)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = count.TrySet(ctx, 3, version)
	require.NoError(t, err)
	assert.False(t, ok, "a stale version does not write")
	select {
	case l := <-second:
		require.NoError(t, l.Release(ctx))
	case <-time.After(waitLimit):
		t.Fatal("raising the count did not let the waiter in")
	}
	require.NoError(t, first.Release(ctx))
	data, _, err := c.Get(ctx, "/semaphore-count/max")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 2}, data, "Curator's encoding: 4 bytes, big-endian")
}

// Refusals and cancellations leave no lease node behind.
func TestNothingLeftBehind(t *testing.T) {
	servers := sharedServers(t)
	c := connect(t, servers)
	const path = "/semaphore-leftovers"
	s := newSemaphore(t, c, path, 2)
	ctx := ctxT(t)
	held, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	other := newSemaphore(t, connect(t, servers), path, 2)
	_, err = other.TryAcquire(ctx, 1)
	require.ErrorIs(t, err, recipes.ErrLocked)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = other.Acquire(short, 1)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, 2, leases(t, c, path), "only the holder's leases")
	_, err = other.Acquire(ctx, 3)
	require.ErrorIs(t, err, recipes.ErrInvalidArgument, "more than the semaphore allows")
	require.NoError(t, held.Release(ctx))
	assert.Zero(t, leases(t, c, path))
}

// A semaphore client cut off from the server loses its lease before anyone
// can take its place (while another client holds the other lease): live
// leases never exceed the limit, by the session's margin.
func TestHolderToldFirstWhenCutOff(t *testing.T) {
	servers := sharedServers(t)
	const path, timeout = "/semaphore-cutoff", 3 * time.Second
	other, err := newSemaphore(t, connect(t, servers), path, 2).Acquire(ctxT(t), 1)
	require.NoError(t, err)
	p := harness.NewProxy(t, servers[0])
	holder := newSemaphore(t, connect(t, []string{p.Addr()}, session.WithSessionTimeout(timeout)), path, 2).Locker(1)
	successor := newSemaphore(t, connect(t, servers), path, 2).Locker(1)
	holdertest.HolderToldFirst(t, holder, successor, func() { p.Blackhole(t) },
		timeout/3-recipes.DriftMargin(timeout))
	p.Restore(t)
	require.NoError(t, other.Release(ctxT(t)))
}

func TestBadInput(t *testing.T) {
	c := connect(t, sharedServers(t))
	s := newSemaphore(t, c, "/semaphore-bad", 1)
	count, err := shared.NewCount(c, "/semaphore-bad-count", 1)
	require.NoError(t, err)
	for _, tc := range []struct {
		why string
		err func() error
	}{
		{"New: no leases", func() error { _, err := semaphore.New(c, "/x", 0); return err }},
		{"New: nil client", func() error { _, err := semaphore.New(nil, "/x", 1); return err }},
		{"New: relative path", func() error { _, err := semaphore.New(c, "x", 1); return err }},
		{"New: the root", func() error { _, err := semaphore.New(c, "/", 1); return err }},
		{"New: nil Option", func() error { _, err := semaphore.New(c, "/x", 1, nil); return err }},
		{"NewWithCount: nil count", func() error { _, err := semaphore.NewWithCount(c, "/x", nil); return err }},
		{"NewWithCount: bad path", func() error { _, err := semaphore.NewWithCount(c, "/x/", count); return err }},
		{"NewMutex: nil client", func() error { _, err := semaphore.NewMutex(nil, "/x"); return err }},
		{"NewMutex: nil Option", func() error { _, err := semaphore.NewMutex(c, "/x", nil); return err }},
		{"NewSharedCount: nil client", func() error { _, err := shared.NewCount(nil, "/x", 1); return err }},
		{"NewSharedCount: relative path", func() error { _, err := shared.NewCount(c, "x", 1); return err }},
		{"NewSharedCount: seed past 32 bits", func() error { _, err := shared.NewCount(c, "/x", 1<<31); return err }},
		{"TrySet: past 32 bits", func() error { _, err := count.TrySet(ctxT(t), -1<<31-1, 0); return err }},
		{"Acquire: no leases", func() error { _, err := s.Acquire(ctxT(t), 0); return err }},
		{"Locker: no leases", func() error { _, err := s.Locker(0).Acquire(ctxT(t)); return err }},
	} {
		assert.ErrorIs(t, tc.err(), recipes.ErrInvalidArgument, tc.why)
	}
}

func TestString(t *testing.T) {
	c := connect(t, sharedServers(t))
	s := newSemaphore(t, c, "/semaphores/db", 3)
	assert.Equal(t, "semaphore /semaphores/db", s.String())
	assert.Equal(t, "semaphore /semaphores/db (1 lease)", fmt.Sprint(s.Locker(1)))
	assert.Equal(t, "semaphore /semaphores/db (2 leases)", fmt.Sprint(s.Locker(2)))
	m, err := semaphore.NewMutex(c, "/semaphores/m")
	require.NoError(t, err)
	assert.Equal(t, "semaphore /semaphores/m (mutex)", m.String())
}

// Under OnlyLostIsLost a semaphore's lease survives reconnections that pass
// a member that accepts and never answers, and a waiter keeps waiting
// through its own; it takes the lease once the holder gives it back.
func TestBesideASickMember(t *testing.T) {
	server := sharedServers(t)[0]
	holder := zktest.ConnectBesideSick(t, server, session.WithErrorPolicy(session.OnlyLostIsLost))
	waiter := zktest.ConnectBesideSick(t, server, session.WithErrorPolicy(session.OnlyLostIsLost))
	const path = "/semaphore-sick-member"
	ctx := ctxT(t)
	held, err := newSemaphore(t, holder.Client, path, 1).Acquire(ctx, 1)
	require.NoError(t, err)
	sw := newSemaphore(t, waiter.Client, path, 1)
	pending := zktest.AcquireAsync(func() (recipes.Lease, error) { return sw.Acquire(ctx, 1) })
	pending.Waiting(t, "the waiter while the lease is held")
	waiter.Switch(t)
	holder.Switch(t)
	require.NoError(t, held.Err(), "the lease survives its holder's switch")
	pending.Waiting(t, "the waiter after both switches")
	require.NoError(t, held.Release(ctx))
	got := pending.Acquired(t, "the waiter, once the lease is back")
	require.NoError(t, got.Release(ctx))
	assert.Zero(t, leases(t, holder.Client, path), "nothing left behind")
}

// The names zklock ls classifies a semaphore's path by are the nodes the
// semaphore makes: its internal mutex at LocksNode, its leases under
// LeasesNode, named LeaseName.
func TestNodeNames(t *testing.T) {
	c := connect(t, sharedServers(t))
	ctx := ctxT(t)
	const path = "/semaphore-names"
	lease, err := newSemaphore(t, c, path, 1).Acquire(ctx, 1)
	require.NoError(t, err)
	defer func() { require.NoError(t, lease.Release(ctx)) }()
	kids, _, err := c.Children(ctx, path)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{semaphore.LocksNode, semaphore.LeasesNode}, kids)
	leases, _, err := c.Children(ctx, path+"/"+semaphore.LeasesNode)
	require.NoError(t, err)
	require.Len(t, leases, 1)
	child, ok := znode.ParseChild(leases[0], semaphore.LeaseName)
	require.True(t, ok, leases[0])
	assert.Equal(t, semaphore.LeaseName, child.Kind)
	assert.Equal(t, lease.(znode.Lease).Node(), path+"/"+semaphore.LeasesNode+"/"+child.Name)
}
