package semaphore_test

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/shared"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Interoperability with Curator's InterProcessSemaphoreV2 and
// InterProcessSemaphoreMutex (Debian's 5.4 jars, in JVMs driven by package
// curator) on the same paths of a real ZooKeeper.

// interopLeaseName is the name of a Curator lease node; ours have the same
// shape.
var interopLeaseName = regexp.MustCompile(`^_c_[0-9a-f-]{36}-lease-\d{10}$`)

// TestInteropSemaphoreLeases: Curator's and our leases count against one
// max of 3: each side sees the other's lease nodes, neither takes a lease
// beyond the max, a waiter of either language gets the room the other
// frees, and a Go acquire of 3 at once waits for all of it.
func TestInteropSemaphoreLeases(t *testing.T) {
	servers := interopAvailable(t)
	ctx := ctxT(t)
	const p = "/interop-semaphore-leases"
	a := interopAgent(t, servers, "curator A", "semaphore "+p+" 3")
	b := interopAgent(t, servers, "curator B", "semaphore "+p+" 3")
	s1 := newSemaphore(t, connect(t, servers), p, 3)
	s2 := newSemaphore(t, connect(t, servers), p, 3)

	a.DoExpect(t, "sem-acquire", "acquired")
	aNodes := a.List(t, "sem-nodes", "nodes")
	require.Len(t, aNodes, 1)
	require.Regexp(t, interopLeaseName, aNodes[0])
	ps, err := s1.Leases(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, aNodes[0], ps[0].Name)
	require.Equal(t, a.Session(), ps[0].SessionID)

	l1, err := s1.Acquire(ctx, 1)
	require.NoError(t, err)
	b.DoExpect(t, "sem-acquire", "acquired") // the third: the max
	names := interopWaitLeases(t, s1, 3)
	require.ElementsMatch(t, names, a.List(t, "sem-participants", "participants"))
	require.Contains(t, names, path.Base(l1.(znode.Lease).Node()), "Curator lists our lease node")

	// No room: neither language takes a fourth.
	_, err = s2.TryAcquire(ctx, 1)
	require.ErrorIs(t, err, recipes.ErrLocked)
	a.DoExpect(t, "sem-acquire 1 200", "locked")
	interopWaitLeases(t, s1, 3) // the refused tries left nothing behind
	b.DoExpect(t, "sem-held", "held 1")

	// A Go waiter gets the room Curator frees; a Curator waiter the room
	// Go frees.
	res := zktest.AcquireAsync(func() (recipes.Lease, error) { return s2.Acquire(ctx, 1) })
	res.Waiting(t, "Go waiter")
	// The waiter's lease node exists while it waits for room: both sides
	// list it with the held ones (Curator's getParticipantNodes; our Leases,
	// which marks it a holder too, though it holds nothing yet).
	names = interopWaitLeases(t, s1, 4)
	require.ElementsMatch(t, names, a.List(t, "sem-participants", "participants"))
	b.DoExpect(t, "sem-release", "released 1")
	l2 := res.Acquired(t, "Go waiter after Curator's release")
	a.Send(t, "sem-acquire")
	a.ExpectNoReply(t, zktest.StillWaiting)
	require.NoError(t, l1.Release(ctx))
	a.Expect(t, "acquired", waitLimit)
	a.DoExpect(t, "sem-held", "held 2")
	interopWaitLeases(t, s1, 3)

	// Go takes 3 at once only when all three are free.
	res = zktest.AcquireAsync(func() (recipes.Lease, error) { return s1.Acquire(ctx, 3) })
	res.Waiting(t, "Go acquire of 3")
	a.DoExpect(t, "sem-release", "released 2")
	res.Waiting(t, "Go acquire of 3 with 2 free")
	require.NoError(t, l2.Release(ctx))
	l3 := res.Acquired(t, "Go acquire of 3")
	require.ElementsMatch(t, interopWaitLeases(t, s1, 3), b.List(t, "sem-participants", "participants"))
	b.DoExpect(t, "sem-acquire 1 200", "locked")
	b.Send(t, "sem-acquire 2")
	b.ExpectNoReply(t, zktest.StillWaiting)
	require.NoError(t, l3.Release(ctx))
	b.Expect(t, "acquired", waitLimit)
	b.DoExpect(t, "sem-held", "held 2")
	_, err = s2.TryAcquire(ctx, 2) // one free: not two
	require.ErrorIs(t, err, recipes.ErrLocked)
	l4, err := s2.TryAcquire(ctx, 1)
	require.NoError(t, err)
	a.DoExpect(t, "sem-acquire 1 200", "locked")
	require.NoError(t, l4.Release(ctx))
	b.DoExpect(t, "sem-release", "released 2")
	interopWaitLeases(t, s1, 0)
}

// TestInteropSemaphoreCount: Go and Curator clients take leases of one
// semaphore (max 3) in a loop; the leases held, as the holders report them,
// never exceed 3 and reach 3.
func TestInteropSemaphoreCount(t *testing.T) {
	servers := interopAvailable(t)
	const (
		p      = "/interop-semaphore-count"
		max    = 3
		rounds = 15
	)
	holders := newInteropHolders(max)
	type javaHolder struct {
		name string
		a    *curator.Agent
	}
	var java []javaHolder
	for i := range 2 {
		name := fmt.Sprintf("curator-%d", i)
		java = append(java, javaHolder{name, interopAgent(t, servers, name, fmt.Sprintf("semaphore %s %d", p, max))})
	}
	var who []string
	t.Run("holders", func(t *testing.T) {
		for _, j := range java {
			who = append(who, j.name)
			t.Run(j.name, func(t *testing.T) {
				t.Parallel()
				for range rounds {
					j.a.Send(t, "sem-acquire")
					j.a.Expect(t, "acquired", waitLimit)
					holders.enter(j.name, 1)
					time.Sleep(interopHold())
					holders.leave(1)
					j.a.DoExpect(t, "sem-release", "released 1")
				}
			})
		}
		for i := range 3 {
			name := fmt.Sprintf("go-%d", i)
			n := 1
			if i == 2 {
				n = 2 // one Go client takes two leases at a time
			}
			who = append(who, name)
			s := newSemaphore(t, connect(t, servers), p, max)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := ctxT(t)
				for range rounds {
					l, err := s.Acquire(ctx, n)
					require.NoError(t, err)
					holders.enter(name, n)
					time.Sleep(interopHold())
					holders.leave(n)
					require.NoError(t, l.Release(ctx))
				}
			})
		}
	})
	holders.check(t, who)
	interopWaitLeases(t, newSemaphore(t, connect(t, servers), p, max), 0)
}

// TestInteropSemaphoreMutex: Curator's InterProcessSemaphoreMutex and ours
// exclude each other, hand over to each other, and in a loop of Go and
// Curator clients there is never more than one holder.
func TestInteropSemaphoreMutex(t *testing.T) {
	servers := interopAvailable(t)
	ctx := ctxT(t)
	const p = "/interop-semaphore-mutex"
	a := interopAgent(t, servers, "curator", "semmutex "+p)
	m, err := semaphore.NewMutex(connect(t, servers), p)
	require.NoError(t, err)

	a.DoExpect(t, "semmutex-acquire", "acquired")
	_, err = m.TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrLocked)
	res := zktest.AcquireAsync(func() (recipes.Lease, error) { return m.Acquire(ctx) })
	res.Waiting(t, "Go behind Curator")
	a.DoExpect(t, "semmutex-release", "released")
	l := res.Acquired(t, "Go after Curator's release")

	a.DoExpect(t, "semmutex-acquire 200", "locked")
	a.DoExpect(t, "semmutex-held", "held false")
	a.Send(t, "semmutex-acquire")
	a.ExpectNoReply(t, zktest.StillWaiting)
	require.NoError(t, l.Release(ctx))
	a.Expect(t, "acquired", waitLimit)
	_, err = m.TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrLocked)
	a.DoExpect(t, "semmutex-release", "released")

	// Contention: one holder at a time.
	const rounds = 15
	holders := newInteropHolders(1)
	who := []string{"curator"}
	t.Run("holders", func(t *testing.T) {
		t.Run("curator", func(t *testing.T) {
			t.Parallel()
			for range rounds {
				a.Send(t, "semmutex-acquire")
				a.Expect(t, "acquired", waitLimit)
				holders.enter("curator", 1)
				time.Sleep(interopHold())
				holders.leave(1)
				a.DoExpect(t, "semmutex-release", "released")
			}
		})
		for i := range 2 {
			name := fmt.Sprintf("go-%d", i)
			who = append(who, name)
			m, err := semaphore.NewMutex(connect(t, servers), p)
			require.NoError(t, err)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := ctxT(t)
				for range rounds {
					err := recipes.WithLock(ctx, m, func(context.Context) error {
						holders.enter(name, 1)
						time.Sleep(interopHold())
						holders.leave(1)
						return nil
					})
					require.NoError(t, err)
				}
			})
		}
	})
	holders.check(t, who)
}

// TestInteropSemaphoreSharedCount: a semaphore whose max is a SharedCount,
// Curator's and ours on the same count node: each reads the value the
// other writes, and a change of it by either language lets the other's
// waiter in.
func TestInteropSemaphoreSharedCount(t *testing.T) {
	servers := interopAvailable(t)
	ctx := ctxT(t)
	const p = "/interop-semaphore-shared-count"
	const countPath = "/interop-semaphore-shared-count-max"
	a := curator.Start(t, servers, curator.WithName("curator"))
	a.DoExpect(t, "count "+countPath+" 1", "ok")
	a.DoExpect(t, "count-set 1", "ok") // the node persists: from an earlier -count run too
	a.DoExpect(t, "semaphore "+p+" count", "ok")
	c := connect(t, servers)
	sc, err := shared.NewCount(c, countPath, 5) // the node exists: 5 is only a seed
	require.NoError(t, err)
	s, err := semaphore.NewWithCount(c, p, sc)
	require.NoError(t, err)
	v, version, err := sc.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, v, "Curator's count as we read it")

	l1, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	a.DoExpect(t, "sem-acquire 1 200", "locked")
	a.Send(t, "sem-acquire")
	a.ExpectNoReply(t, zktest.StillWaiting)
	ok, err := sc.TrySet(ctx, 2, version) // ours raises Curator's max
	require.NoError(t, err)
	require.True(t, ok)
	a.Expect(t, "acquired", waitLimit)
	a.DoExpect(t, "count-get", "count 2")

	res := zktest.AcquireAsync(func() (recipes.Lease, error) { return s.Acquire(ctx, 1) })
	res.Waiting(t, "Go waiter at 2 of 2")
	a.DoExpect(t, "count-set 3", "ok") // Curator's raises ours
	l2 := res.Acquired(t, "Go waiter after Curator raised the count")
	v, _, err = sc.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, v)
	interopWaitLeases(t, newSemaphore(t, c, p, 3), 3)

	require.NoError(t, l1.Release(ctx))
	require.NoError(t, l2.Release(ctx))
	a.DoExpect(t, "sem-release", "released 1")
	interopWaitLeases(t, newSemaphore(t, c, p, 3), 0)
}
