package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/session"
)

// Under OnlyLostIsLost a short suspension leaves the session value alive.
func TestOnlyLostPolicySurvivesShortSuspension(t *testing.T) {
	z := harness.StartZK(t, 1)
	p := harness.NewProxy(t, z.Servers()[0])
	c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(30*time.Second),
		session.WithErrorPolicy(session.OnlyLostIsLost))
	states := subscribe(t, c)
	s1, err := c.Session(ctxT(t))
	require.NoError(t, err)
	p.Cut(t)
	expect(t, states, session.Suspended)
	p.Restore(t)
	got := expect(t, states, session.Reconnected)
	assert.Equal(t, s1.ID(), got[0].SessionID)
	assert.NoError(t, s1.Err(), "the session value lives on")
	s2, err := c.Session(ctxT(t))
	require.NoError(t, err)
	assert.Same(t, s1, s2)
}

// A connection blackholed past the session timeout: Suspended, Lost, then
// Reconnected with a new session; the old session's Done is closed and its
// ephemeral nodes are gone.
func TestBlackholePastSessionTimeout(t *testing.T) {
	z := harness.StartZK(t, 1)
	p := harness.NewProxy(t, z.Servers()[0])
	const timeout = 2 * time.Second
	for _, policy := range []session.ErrorPolicy{session.SuspendedIsLost, session.OnlyLostIsLost} {
		c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(timeout), session.WithErrorPolicy(policy))
		observer := connect(t, z.Servers())
		states := subscribe(t, c)
		ctx := ctxT(t)
		s1, err := c.Session(ctx)
		require.NoError(t, err)
		node, err := c.Create(ctx, "/blackhole-eph-", nil, session.Ephemeral|session.PersistentSequential)
		require.NoError(t, err)

		p.Blackhole(t)
		expect(t, states, session.Suspended)
		got := expect(t, states, session.Lost)
		assert.ErrorIs(t, got[0].Err, session.ErrSessionLost)
		closed(t, s1.Done(), "old session Done")
		assert.Error(t, s1.Err())

		// The server expires the session on its own: the node goes.
		require.Eventually(t, func() bool {
			ok, _, err := observer.Exists(ctx, node)
			return err == nil && !ok
		}, waitLimit, 50*time.Millisecond, "ephemeral node of the lost session still there")

		p.Restore(t)
		got = expect(t, states, session.Reconnected)
		assert.NotEqual(t, s1.ID(), got[0].SessionID, "a new session")
		s2, err := c.Session(ctx)
		require.NoError(t, err)
		assert.NotEqual(t, s1.ID(), s2.ID())
		assert.Equal(t, got[0].SessionID, s2.ID())
		_, err = c.Create(ctx, "/blackhole-after-", nil, session.Ephemeral|session.PersistentSequential)
		require.NoError(t, err, "the new session works")
		c.Close()
	}
}

// An ensemble member killed while connected: the client moves to another
// member and keeps its session.
func TestEnsembleMemberKilled(t *testing.T) {
	z := harness.StartZK(t, 3)
	c := connect(t, z.Servers(), session.WithSessionTimeout(20*time.Second),
		session.WithErrorPolicy(session.OnlyLostIsLost))
	states := subscribe(t, c)
	ctx := ctxT(t)
	s1, err := c.Session(ctx)
	require.NoError(t, err)
	node, err := c.Create(ctx, "/ensemble-eph", []byte("x"), session.Ephemeral)
	require.NoError(t, err)

	// Killing the leader drops every client connection of the ensemble.
	z.Leader(t).Kill(t)
	expect(t, states, session.Suspended)
	got := expect(t, states, session.Reconnected)
	assert.Equal(t, s1.ID(), got[0].SessionID)
	data, _, err := c.Get(ctx, node)
	require.NoError(t, err, "work goes on with two members")
	assert.Equal(t, "x", string(data))
	z.Leader(t) // a new leader was elected
}

// Retries stop when ctx ends, and when the policy gives up.
func TestRetriesStop(t *testing.T) {
	z := harness.StartZK(t, 1)
	patient := connect(t, z.Servers(), session.WithSessionTimeout(30*time.Second),
		session.WithRetryPolicy(session.ExponentialBackoff{Base: 50 * time.Millisecond, Cap: 200 * time.Millisecond,
			MaxRetries: 1000, MaxElapsed: time.Hour}))
	few := connect(t, z.Servers(), session.WithSessionTimeout(30*time.Second),
		session.WithRetryPolicy(session.ExponentialBackoff{Base: 10 * time.Millisecond, Cap: 10 * time.Millisecond,
			MaxRetries: 2}))
	states := subscribe(t, patient)
	z.Members()[0].Stop(t)
	expect(t, states, session.Suspended)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _, err := patient.Get(ctx, "/")
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	_, _, err = few.Get(ctxT(t), "/")
	assert.ErrorIs(t, err, session.ErrRetriesExhausted)
	assert.True(t, session.IsRetryable(err), "the last error was retryable: %v", err)
}

// A server name that does not resolve: the client keeps dialing in the
// background until Connect's deadline, then gives up cleanly (goleak checks
// that the dialing stopped).
func TestUnresolvableServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := session.Connect(ctx, []string{"zk.invalid:2181"}, quiet())
	assert.Nil(t, c)
	assert.ErrorIs(t, err, session.ErrNotConnected)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}
