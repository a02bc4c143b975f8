package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// A writer process killed with SIGKILL: queued readers get the lock once its
// session expires; a reader process killed likewise lets a writer in.
func TestHolderKilled(t *testing.T) {
	servers := sharedServers(t)
	for _, kind := range []string{"write", "read"} {
		t.Run(kind, func(t *testing.T) {
			path := "/rw/sigkill-" + kind
			holder := zktest.StartHolder(t, servers, path, kind, 2*time.Second)
			rw := newRW(t, connect(t, servers), path)
			var waiter recipes.Locker = rw.ReadLock()
			if kind == "read" {
				waiter = rw.WriteLock()
			}
			_, err := waiter.TryAcquire(ctxT(t))
			require.ErrorIs(t, err, recipes.ErrLocked)
			holder.Kill(t)
			lease, err := waiter.Acquire(ctxT(t))
			require.NoError(t, err, "never acquired after the holder was killed")
			require.NoError(t, lease.Release(ctxT(t)))
		})
	}
}

// The holder's connection is blackholed past the session timeout: its
// lease ends before a queued writer gets the lock.
func TestBlackholedWriterCancelledFirst(t *testing.T) {
	z := harness.StartZK(t, 1)
	p := harness.NewProxy(t, z.Servers()[0])
	const path = "/rw/blackhole"
	ctx := ctxT(t)
	held, err := newRW(t, connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second)), path).WriteLock().Acquire(ctx)
	require.NoError(t, err)
	w := newRW(t, connect(t, z.Servers()), path).WriteLock()
	got := make(chan bool, 1)
	go func() {
		l, err := w.Acquire(ctx)
		if assert.NoError(t, err) {
			got <- held.Err() != nil // the old lease must already be over
			_ = l.Release(ctx)
		}
		close(got)
	}()
	p.Blackhole(t)
	select {
	case ok := <-got:
		assert.True(t, ok, "the next writer acquired while the blackholed writer's lease was live")
	case <-time.After(waitLimit):
		t.Fatal("the next writer never acquired")
	}
	assert.ErrorIs(t, context.Cause(held.Context()), recipes.ErrLockLost)
	p.Restore(t)
}

// The leader is killed while readers and writers contend: writers stay
// exclusive, readers still share, and the work goes on.
func TestLeaderKilledWhileContending(t *testing.T) {
	z := harness.StartZK(t, 3)
	leader := z.Leader(t)
	killed := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // let the contention get going
		killed <- leader.KillErr()
	}()
	o := contend(t, z.Servers(), "/rw/leader", 3, 2, 40, 5*time.Millisecond)
	require.NoError(t, <-killed)
	require.Empty(t, o.errs)
	z.Leader(t)
}
