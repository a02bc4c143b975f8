package leader_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// faultTimeout is the session timeout of the leaders in these tests.
const faultTimeout = 3 * time.Second

// The leader's connection is blackholed: its leadership ends before a new
// leader is elected, by the margin the session package promises (a third
// of the session timeout less the drift margin by default; the drift
// margin under OnlyLostIsLost, less its scheduling allowance).
func TestLeaderToldFirstUnderBlackhole(t *testing.T) {
	servers := sharedServers(t)
	for _, policy := range []session.ErrorPolicy{session.SuspendedIsLost, session.OnlyLostIsLost} {
		t.Run(fmt.Sprint("policy ", policy), func(t *testing.T) {
			p := harness.NewProxy(t, servers[0])
			path := fmt.Sprintf("/election-blackhole-%d", policy)
			old := newLatch(t, connect(t, []string{p.Addr()}, session.WithSessionTimeout(faultTimeout),
				session.WithErrorPolicy(policy)), path, "old")
			successor := newLatch(t, connect(t, servers), path, "successor")
			want := faultTimeout/3 - recipes.DriftMargin(faultTimeout)
			if policy == session.OnlyLostIsLost {
				want = recipes.DriftMargin(faultTimeout) - 10*time.Millisecond
			}
			margin := holdertest.HolderToldFirst(t, old, successor, func() { p.Blackhole(t) }, want)
			t.Logf("margin: %.0f%% of the session timeout", 100*margin.Seconds()/faultTimeout.Seconds())
			p.Restore(t)
		})
	}
}

// The leader is killed (SIGKILL): the successor leads once the server
// expires the dead leader's session.
func TestLeaderKilled(t *testing.T) {
	servers := sharedServers(t)
	const path = "/election-sigkill"
	old := zktest.StartHolder(t, servers, path, "old", faultTimeout)
	e := newLatch(t, connect(t, servers), path, "successor")
	lead, err := e.Leader(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, "old", lead.ID)
	old.Kill(t)
	l, err := e.Campaign(ctxT(t))
	require.NoError(t, err)
	assert.Greater(t, zktest.Token(t, l), old.Token)
	require.NoError(t, l.Release(ctxT(t)))
}

// The leader is paused (SIGSTOP) past its session timeout: no timer can run
// in a stopped process, but its leadership was trusted only until a
// deadline that passed before the successor was elected; once resumed, it
// sees its leadership ended at once.
func TestLeaderPaused(t *testing.T) {
	servers := sharedServers(t)
	const path = "/election-sigstop"
	old := zktest.StartHolder(t, servers, path, "old", faultTimeout)
	old.Signal(t, syscall.SIGSTOP)
	l, err := newLatch(t, connect(t, servers), path, "successor").Campaign(ctxT(t))
	require.NoError(t, err)
	elected := time.Now()
	margin := elected.Sub(old.Deadline)
	t.Logf("the paused leader's trust ended %v before the successor was elected", margin.Round(time.Millisecond))
	assert.GreaterOrEqual(t, margin, faultTimeout/3-recipes.DriftMargin(faultTimeout))
	assert.Greater(t, zktest.Token(t, l), old.Token, "the successor's token fences the paused leader out")
	old.Signal(t, syscall.SIGCONT)
	_, cause := old.Ended(t)
	assert.Contains(t, cause, recipes.ErrLockLost.Error())
	require.NoError(t, l.Release(ctxT(t)))
}

// The ensemble's leader is killed while participants take turns leading:
// never two leaders at once, and the elections go on.
func TestEnsembleLeaderKilled(t *testing.T) {
	z := harness.StartZK(t, 3)
	lockers := make([]recipes.Locker, 5)
	for i := range lockers {
		lockers[i] = newLatch(t, connect(t, z.Servers(), session.WithSessionTimeout(10*time.Second)), "/election-ensemble", fmt.Sprint("p", i))
	}
	done := make(chan error, 1)
	go func() {
		_, err := locktest.Contention(ctxT(t), lockers, 40)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	z.Leader(t).Kill(t)
	select {
	case err := <-done:
		require.NoError(t, err, "two leaders at once, or the elections stopped")
	case <-time.After(3 * waitLimit):
		t.Fatal("the elections did not finish")
	}
}

// Under OnlyLostIsLost a leader keeps leading across reconnections that
// pass a member that accepts and never answers; an observer sees the same
// leader throughout, and the leader's node is the one it won with.
func TestLeaderBesideASickMember(t *testing.T) {
	b := zktest.ConnectBesideSick(t, sharedServers(t)[0], session.WithErrorPolicy(session.OnlyLostIsLost))
	const path = "/election-sick-member"
	e := newLatch(t, b.Client, path, "steady")
	observer := newLatch(t, connect(t, sharedServers(t)), path, "observer")
	ctx := ctxT(t)
	l, err := e.Campaign(ctx)
	require.NoError(t, err)
	for i := range 3 {
		b.Switch(t)
		require.NoError(t, l.Err(), "still leading after switch %d", i)
		now, err := observer.Leader(ctx)
		require.NoError(t, err)
		assert.Equal(t, l.Node(), now.Node, "the same leader after switch %d", i)
	}
	require.NoError(t, l.Release(ctx))
}
