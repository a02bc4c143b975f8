package session_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/session"
)

// A member that accepts connections and never answers is the most common
// sick member (a GC pause, a stopped process, a member loading its
// snapshot). These tests put one beside a healthy server and check that it
// never costs a session: go-zookeeper alone gives such a handshake more than
// six session timeouts.

// sickTimeout is the session timeout of these tests: the handshake's bound
// is a third of it.
const sickTimeout = 6 * time.Second

// Connect succeeds whichever of a sick and a healthy server it tries first.
// The list is shuffled, so the loop goes on until the sick one has been
// tried twice (or 20 connects, half of which try it first).
func TestConnectBesideASickMember(t *testing.T) {
	z := harness.StartZK(t, 1)
	mute := harness.NewMute(t)
	servers := []string{mute.Addr(), z.Servers()[0]}
	for i := 0; i < 20 && mute.Accepted() < 2; i++ {
		before, start := mute.Accepted(), time.Now()
		c, err := session.Connect(ctxT(t), servers, quiet(), session.WithSessionTimeout(sickTimeout))
		require.NoError(t, err, "connect %d (the sick member was tried %d times)", i, mute.Accepted())
		t.Logf("connect %d: %v, sick member tried: %v", i, time.Since(start).Round(time.Millisecond), mute.Accepted() > before)
		c.Close()
	}
	assert.GreaterOrEqual(t, mute.Accepted(), 1, "the sick member was never tried")
}

// Every reconnection after a cut tries the sick member first (after a
// connection to one of two addresses, the next attempt goes to the other),
// and the session survives each of them.
func TestCutsBesideASickMemberKeepTheSession(t *testing.T) {
	z := harness.StartZK(t, 1)
	mute := harness.NewMute(t)
	p := harness.NewProxy(t, z.Servers()[0])
	c := connect(t, []string{mute.Addr(), p.Addr()}, session.WithSessionTimeout(sickTimeout))
	states := subscribe(t, c)
	s, err := c.Session(ctxT(t))
	require.NoError(t, err)
	const cuts = 6
	for i := 0; i < cuts; i++ {
		before := mute.Accepted()
		p.Cut(t)
		suspended := expect(t, states, session.Suspended)
		p.Restore(t)
		got := expect(t, states, session.Reconnected)
		require.Equal(t, s.ID(), got[0].SessionID, "cut %d: the session survives", i)
		t.Logf("cut %d: reconnected after %v (bound %v)", i,
			got[0].Time.Sub(suspended[0].Time).Round(time.Millisecond), sickTimeout/3)
		require.Greater(t, mute.Accepted(), before, "cut %d: the reconnection tried the sick member first", i)
	}
	_, _, err = c.Exists(ctxT(t), "/")
	require.NoError(t, err)
}

// A restarted member that accepts before it serves: the client's
// reconnection lands on a listener that never answers (deterministically:
// the test waits for it), then the real server comes back on the same port.
// The client abandons the silent attempt within a third of its session
// timeout and reconnects to the same session.
func TestServerRestartKeepsSession(t *testing.T) {
	z := harness.StartZK(t, 1)
	c := connect(t, z.Servers(), session.WithSessionTimeout(20*time.Second))
	states := subscribe(t, c)
	ctx := ctxT(t)
	s1, err := c.Session(ctx)
	require.NoError(t, err)
	node, err := c.Create(ctx, "/restart-eph", nil, session.Ephemeral)
	require.NoError(t, err)

	member := z.Members()[0]
	member.Stop(t)
	got := expect(t, states, session.Suspended)
	assert.ErrorIs(t, got[0].Err, session.ErrSuspended)
	closed(t, s1.Done(), "session value at Suspended")
	assert.ErrorIs(t, s1.Err(), session.ErrSuspended)

	mute := harness.MuteAt(t, member.Addr())
	mute.WaitAccepted(t, 1, waitLimit)
	mute.StopListening() // the client's attempt stays stuck on it
	member.Start(t)
	got = expect(t, states, session.Reconnected)
	assert.Equal(t, s1.ID(), got[0].SessionID, "same session")
	s2, err := c.Session(ctx)
	require.NoError(t, err)
	assert.Equal(t, s1.ID(), s2.ID())
	assert.NotSame(t, s1, s2, "a new session value after suspension")
	ok, _, err := c.Exists(ctx, node)
	require.NoError(t, err)
	assert.True(t, ok, "the session's ephemeral node survived")
}

// A real ensemble member stopped with SIGSTOP: its kernel still accepts
// connections. Connect succeeds, and reconnections that try it keep the
// session. Every member is behind a proxy so that the test can count the
// attempts on the stopped one and cut the healthy ones.
func TestStoppedEnsembleMember(t *testing.T) {
	z := harness.StartZK(t, 3)
	servers, proxies := harness.ProxiedServers(t, z)
	leader := z.Leader(t)
	sick := -1
	for i, m := range z.Members() {
		if m != leader {
			sick = i // a follower: the ensemble keeps its quorum and leader
			break
		}
	}
	member := z.Members()[sick]
	member.Pause(t)
	t.Cleanup(func() { member.Resume(t) }) // before the ensemble is stopped
	tried := func() int { return proxies[sick].Accepted() }

	for i := 0; i < 20 && tried() < 2; i++ {
		c, err := session.Connect(ctxT(t), servers, quiet(), session.WithSessionTimeout(sickTimeout))
		require.NoError(t, err, "connect %d (the stopped member was tried %d times)", i, tried())
		c.Close()
	}
	require.GreaterOrEqual(t, tried(), 1, "the stopped member was never tried")

	c := connect(t, servers, session.WithSessionTimeout(sickTimeout))
	states := subscribe(t, c)
	s, err := c.Session(ctxT(t))
	require.NoError(t, err)
	// Each round cuts the healthy members, so the reconnection must pass
	// the stopped one at least every other round (the client tries the
	// addresses in turn).
	start := tried()
	for round := 0; round < 8 && tried() < start+2; round++ {
		for i, p := range proxies {
			if i != sick {
				p.Cut(t)
			}
		}
		expect(t, states, session.Suspended)
		for i, p := range proxies {
			if i != sick {
				p.Restore(t)
			}
		}
		got := expect(t, states, session.Reconnected)
		require.Equal(t, s.ID(), got[0].SessionID, "round %d: the session survives", round)
	}
	assert.GreaterOrEqual(t, tried(), start+1, "no reconnection tried the stopped member")
}

// A member restarting with data to load (about 24 MB of nodes in its
// transaction log): while it comes back, each round cuts the healthy
// members, so the client's reconnections pass the restarting one, and the
// session is kept throughout.
func TestRestartingEnsembleMember(t *testing.T) {
	z := harness.StartZK(t, 3)
	servers, proxies := harness.ProxiedServers(t, z)
	c := connect(t, servers, session.WithSessionTimeout(sickTimeout))
	ctx := ctxT(t)
	_, err := c.Create(ctx, "/bulk", nil, 0)
	require.NoError(t, err)
	blob := make([]byte, 400<<10)
	for i := range 60 {
		_, err := c.Create(ctx, fmt.Sprintf("/bulk/n%03d", i), blob, 0)
		require.NoError(t, err)
	}
	leader := z.Leader(t)
	sick := -1
	for i, m := range z.Members() {
		if m != leader {
			sick = i
			break
		}
	}
	member := z.Members()[sick]
	member.Kill(t)
	states := subscribe(t, c)
	s, err := c.Session(ctx)
	require.NoError(t, err)
	started := make(chan error, 1)
	go func() { started <- member.StartErr() }()
	tried := proxies[sick].Accepted()
	// Rounds (bounded) until the member is back and a reconnection has
	// tried it: each cuts every proxy, so the reconnection runs through the
	// addresses in turn.
	var startErr error
	back, round := false, 0
	for ; round < 100 && !(back && proxies[sick].Accepted() > tried); round++ {
		if !back {
			select {
			case startErr = <-started:
				// ruok answers before the member has loaded its data and
				// joined the quorum: back once it serves as a follower.
				mode, err := member.Mode()
				back = err == nil && mode == "follower"
				started <- startErr
			default:
			}
		}
		for _, p := range proxies {
			p.Cut(t)
		}
		awaitNotLost(t, states, session.Suspended)
		for _, p := range proxies {
			p.Restore(t)
		}
		got := awaitNotLost(t, states, session.Reconnected)
		require.Equal(t, s.ID(), got.SessionID, "round %d: the session survives", round)
		time.Sleep(100 * time.Millisecond) // spread the rounds over the restart
	}
	startErr = <-started
	require.NoError(t, startErr)
	t.Logf("%d rounds while the member restarted; it was tried %d times", round, proxies[sick].Accepted()-tried)
	assert.Greater(t, proxies[sick].Accepted(), tried, "no reconnection tried the restarting member")
	z.WaitReady(t)
}

// awaitNotLost reads state changes until want, failing on Lost: a member
// that joins its quorum may drop its clients' connections on its own, so
// other Suspended and Reconnected changes may come between.
func awaitNotLost(t *testing.T, ch <-chan session.StateChange, want session.State) session.StateChange {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case c, ok := <-ch:
			require.True(t, ok, "state channel closed")
			require.NotEqual(t, session.Lost, c.State, "the session was lost")
			if c.State == want {
				return c
			}
		case <-timeout:
			t.Fatalf("no %v within %v", want, waitLimit)
		}
	}
}
