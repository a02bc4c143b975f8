package multilock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/recipes/multilock"
	"github.com/zkrecipes/zkrecipes/session"
)

// unavailableWait bounds an Acquire that cannot succeed.
const unavailableWait = time.Second

// requireMemberError checks that err says member index failed doing op.
func requireMemberError(t *testing.T, err error, index int, op string) *multilock.MemberError {
	t.Helper()
	var me *multilock.MemberError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, index, me.Index, "the failed member: %v", err)
	assert.Equal(t, op, me.Op, "%v", err)
	return me
}

// waitDone waits, bounded, for lease to end.
func waitDone(t *testing.T, lease recipes.Lease) {
	t.Helper()
	select {
	case <-lease.Done():
	case <-time.After(waitLimit):
		t.Fatalf("the lease did not end within %v", waitLimit)
	}
}

// A member whose server cannot be reached: Acquire fails when its ctx ends,
// having released the members it took, and leaves nothing on any server.
// Once the server is back, the MultiLock works again.
func TestMemberUnavailable(t *testing.T) {
	t.Run("redis cut", func(t *testing.T) {
		s := startServers(t)
		const name = "unavailable-redis"
		p := harness.NewProxy(t, s.redis.Addr())
		m := newMulti(t, zkMutex(t, s.zk, name), redisLock(t, p.Addr(), name), mcLock(t, s.mc.Addr(), name))
		p.Cut(t)
		checkUnavailable(t, s, m, name, 1, func() { p.Restore(t) })
	})
	t.Run("memcached stopped", func(t *testing.T) {
		s := startServers(t)
		const name = "unavailable-memcached"
		m := newMulti(t, zkMutex(t, s.zk, name), redisLock(t, s.redis.Addr(), name), mcLock(t, s.mc.Addr(), name))
		s.mc.Stop(t)
		checkUnavailable(t, s, m, name, 2, func() { s.mc.Start(t) })
	})
}

// checkUnavailable: m's member down (whose server restore brings back)
// makes Acquire fail with ctx's deadline, after taking the members before
// it (each is released: nothing is left of them).
func checkUnavailable(t *testing.T, s *servers, m *multilock.MultiLock, name string, down int, restore func()) {
	ctx, cancel := context.WithTimeout(ctxT(t), unavailableWait)
	defer cancel()
	start := time.Now()
	lease, err := m.Acquire(ctx)
	late := time.Since(start) - unavailableWait
	// Logged, not asserted (timing is the benchmark's business): it was
	// seconds when the clean-up was synchronous; GiveUpGrace bounds it now.
	t.Logf("Acquire returned %v after its deadline", late.Round(time.Millisecond))
	require.Nil(t, lease)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	requireMemberError(t, err, down, multilock.OpAcquire) // the members before it were taken
	// The members taken are released (within GiveUpGrace, or in the
	// background on a busy machine), while the member down is still down.
	eventually(t, "the members taken are released", func() bool {
		return len(s.zkLeftovers(t, name)) == 0 && (down <= 1 || len(s.redisLeftovers(t, name)) == 0)
	})

	restore()
	s.noLeftovers(t, name)
	lease, err = m.Acquire(ctxT(t))
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctxT(t)))
	s.noLeftovers(t, name)
}

// ctx is cancelled while Acquire waits for the second member: the first is
// released, the waiter leaves the second's queue, and the second's holder
// keeps it.
func TestCancelWhileWaitingForSecond(t *testing.T) {
	s := startServers(t)
	const name = "cancel-second"
	ctx := ctxT(t)
	holder, err := redisLock(t, s.redis.Addr(), name).Acquire(ctx)
	require.NoError(t, err)
	m := newMulti(t, zkMutex(t, s.zk, name), redisLock(t, s.redis.Addr(), name))

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := make(chan error, 1)
	go func() {
		lease, err := m.Acquire(wctx)
		if lease != nil {
			_ = lease.Release(ctx)
		}
		res <- err
	}()
	eventually(t, "holding the first member and queued for the second", func() bool {
		n, err := s.rAdmin.Exists(ctx, "{"+name+"}:queue").Result()
		return err == nil && n == 1 && len(s.zkLeftovers(t, name)) == 1
	})
	cancel()
	select {
	case err = <-res:
	case <-time.After(waitLimit):
		t.Fatal("Acquire did not return after its ctx was cancelled")
	}
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	require.ErrorIs(t, err, context.Canceled)
	requireMemberError(t, err, 1, multilock.OpAcquire)
	// The first member is released and the waiter leaves the second's
	// queue (within GiveUpGrace, or in the background on a busy machine).
	eventually(t, "the first member released, only the holder's key left", func() bool {
		return len(s.zkLeftovers(t, name)) == 0 &&
			len(s.redisLeftovers(t, name)) == 1 &&
			strings.HasPrefix(s.redisLeftovers(t, name)[0], "redis {"+name+"} = ")
	})
	require.NoError(t, holder.Err(), "the second member's holder keeps it")
	require.NoError(t, holder.Release(ctx))
	s.noLeftovers(t, name)
}

// MultiLocks over the same locks in the same order, each with sessions and
// clients of its own, and a lone holder of one of the locks: never two
// holders at once.
func TestContention(t *testing.T) {
	s := startServers(t)
	const name = "contention"
	lockers := []recipes.Locker{
		s.multi(t, name), s.multi(t, name), s.multi(t, name),
		redisLock(t, s.redis.Addr(), name),
	}
	lost, err := locktest.Contention(ctxT(t), lockers, locktest.DefaultRounds)
	require.NoError(t, err)
	assert.Zero(t, lost, "leases lost with no fault injected")
	s.noLeftovers(t, name)
}

// A ZooKeeper member's session is partitioned away: the MultiLock's lease
// ends (at the session's suspension, before the server can expire it),
// with a cause that names the member; the Redis and memcached members are
// released at once, without waiting for Release or for the session; and
// once the session expires another contender takes all three.
func TestMemberSessionLost(t *testing.T) {
	s := startServers(t)
	const name = "session-lost"
	ctx := ctxT(t)
	p := harness.NewProxy(t, s.zk[0])
	m := newMulti(t,
		zkMutex(t, []string{p.Addr()}, name, session.WithSessionTimeout(2*time.Second)),
		redisLock(t, s.redis.Addr(), name), mcLock(t, s.mc.Addr(), name))
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)

	p.Blackhole(t)
	t.Cleanup(func() { p.Restore(t) })
	waitDone(t, lease)
	cause := context.Cause(lease.Context())
	require.ErrorIs(t, cause, recipes.ErrLockLost)
	requireMemberError(t, cause, 0, multilock.OpLost)
	eventually(t, "the Redis and memcached members released", func() bool {
		return len(s.redisLeftovers(t, name))+len(s.mcLeftovers(t, name)) == 0
	})

	err = lease.Release(ctx)
	require.ErrorIs(t, err, recipes.ErrLockLost)
	require.ErrorIs(t, lease.Release(ctx), recipes.ErrNotHeld)

	next, err := s.multi(t, name).Acquire(ctx) // once the session has expired
	require.NoError(t, err)
	require.NoError(t, next.Release(ctx))
	p.Restore(t)
	s.noLeftovers(t, name)
}

// A memcached member's item is deleted under its holder (an eviction, a
// restart): the MultiLock's lease ends when that member's renewal finds it
// gone, naming it, and the other members are released.
func TestMemberTTLLost(t *testing.T) {
	s := startServers(t)
	const name = "ttl-lost"
	ctx := ctxT(t)
	lease, err := s.multi(t, name).Acquire(ctx)
	require.NoError(t, err)
	ls := lease.(*multilock.Lease).Leases()
	require.Len(t, ls, 3)
	for i, ml := range ls {
		_, ok := ml.Token()
		assert.True(t, ok, "member %d has a token", i)
	}

	require.NoError(t, s.mcAdmin.Delete(name))
	waitDone(t, lease)
	cause := context.Cause(lease.Context())
	require.ErrorIs(t, cause, recipes.ErrLockLost)
	requireMemberError(t, cause, 2, multilock.OpLost)
	for i, ml := range ls {
		waitDone(t, ml) // every member's lease ends: released, or lost
		if i < 2 {
			assert.ErrorIs(t, ml.Err(), recipes.ErrReleased, "member %d", i)
		}
	}
	s.noLeftovers(t, name)
	require.ErrorIs(t, lease.Release(ctx), recipes.ErrLockLost)
}
