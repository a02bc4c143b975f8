package session_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// stateNames are the State of reports.
func stateNames(reports []session.StateChange) []string {
	names := make([]string, len(reports))
	for i, r := range reports {
		names[i] = r.State.String()
	}
	return names
}

// awaitStates waits (bounded) until rec has n StateChange reports and
// returns them.
func awaitStates(t *testing.T, rec *tracetest.Recorder, n int) []session.StateChange {
	t.Helper()
	rec.Await(t, fmt.Sprintf("%d session states", n), func(r *tracetest.Recorder) bool { return len(r.States()) >= n })
	return rec.States()
}

// connectsTo returns the Connect reports of attempts at server.
func connectsTo(rec *tracetest.Recorder, server string) (ok, failed []session.ConnectInfo) {
	for _, c := range rec.Connects() {
		if c.Server != server {
			continue
		}
		if c.Err == nil {
			ok = append(ok, c)
		} else {
			failed = append(failed, c)
		}
	}
	return ok, failed
}

// StateChange across a cut and a Close: Connected, Suspended (with its
// cause), Reconnected to the same session, Closed; and Connect for each
// connection made through the proxy.
func TestTraceSessionStates(t *testing.T) {
	p := harness.NewProxy(t, zktest.Shared(t)[0])
	rec := tracetest.New()
	tr := rec.Trace()
	c := connect(t, []string{p.Addr()}, session.WithTrace(tr), session.WithClientTrace(rec.ClientTrace()))
	assert.Same(t, tr, c.Trace())
	states := subscribe(t, c)
	s, err := c.Session(ctxT(t))
	require.NoError(t, err)
	got := awaitStates(t, rec, 1)
	assert.Equal(t, session.Connected, got[0].State)
	assert.Equal(t, s.ID(), got[0].SessionID)
	assert.NoError(t, got[0].Err)
	assert.False(t, got[0].Time.IsZero())

	p.Cut(t)
	expect(t, states, session.Suspended)
	p.Restore(t)
	expect(t, states, session.Reconnected)
	got = awaitStates(t, rec, 3)
	assert.Equal(t, []string{"Connected", "Suspended", "Reconnected"}, stateNames(got))
	assert.ErrorIs(t, got[1].Err, session.ErrSuspended)
	assert.Equal(t, s.ID(), got[1].SessionID)
	assert.Equal(t, s.ID(), got[2].SessionID, "the same session")

	c.Close()
	got = awaitStates(t, rec, 4)
	assert.Equal(t, []string{"Connected", "Suspended", "Reconnected", "Closed"}, stateNames(got))
	assert.ErrorIs(t, got[3].Err, session.ErrClosed)

	ok, _ := connectsTo(rec, p.Addr())
	require.Len(t, ok, 2, "the first connection and the reconnection")
	for _, c := range ok {
		assert.Positive(t, c.Latency)
	}
}

// Connect reports the attempts that fail: at a member that accepts and
// never answers (as a member stopped with SIGSTOP does: the handshake
// times out), and at a port where nothing listens (refused); and the
// attempts that succeed.
func TestTraceConnectAttempts(t *testing.T) {
	server := zktest.Shared(t)[0]
	t.Run("silent member", func(t *testing.T) {
		rec := tracetest.New()
		b := zktest.ConnectBesideSick(t, server, session.WithClientTrace(rec.ClientTrace()))
		b.Switch(t) // the reconnection tries the silent member first
		ok, failed := connectsTo(rec, b.Mute.Addr())
		assert.Empty(t, ok)
		require.NotEmpty(t, failed, "the attempt at the silent member")
		for _, f := range failed {
			assert.Positive(t, f.Latency)
		}
		ok, _ = connectsTo(rec, b.Proxy.Addr())
		assert.Len(t, ok, 2, "the first connection and the reconnection")
	})
	t.Run("stopped member", func(t *testing.T) {
		// A server of another ensemble, stopped before the client starts: it
		// never answers, so the session is always the healthy server's.
		z := harness.StartZK(t, 1)
		stopped := z.Members()[0]
		stopped.Pause(t) // SIGSTOP: its kernel still accepts connections
		t.Cleanup(func() { stopped.Resume(t) })
		p := harness.NewProxy(t, server)
		rec := tracetest.New()
		c := connect(t, []string{stopped.Addr(), p.Addr()}, session.WithSessionTimeout(sickTimeout),
			session.WithClientTrace(rec.ClientTrace()))
		states := subscribe(t, c)
		p.Cut(t) // the next attempt goes to the stopped member first
		expect(t, states, session.Suspended)
		rec.Await(t, "an attempt at the stopped member", func(r *tracetest.Recorder) bool {
			_, failed := connectsTo(r, stopped.Addr())
			return len(failed) > 0
		})
		p.Restore(t)
		expect(t, states, session.Reconnected)
		_, failed := connectsTo(rec, stopped.Addr())
		t.Logf("the attempt at the stopped member: %v after %v", failed[0].Err, failed[0].Latency.Round(time.Millisecond))
		ok, _ := connectsTo(rec, p.Addr())
		assert.NotEmpty(t, ok)
	})
	t.Run("closed port", func(t *testing.T) {
		ports, err := harness.FreePorts(1)
		require.NoError(t, err)
		closed := fmt.Sprintf("%s:%d", harness.Loopback, ports[0])
		p := harness.NewProxy(t, server)
		rec := tracetest.New()
		c := connect(t, []string{closed, p.Addr()}, session.WithClientTrace(rec.ClientTrace()))
		states := subscribe(t, c)
		// After a connection to one of two addresses the client tries the
		// other first: cut, the next attempts go to the closed port and
		// to the cut proxy, until the proxy is back.
		p.Cut(t)
		expect(t, states, session.Suspended)
		rec.Await(t, "an attempt at the closed port", func(r *tracetest.Recorder) bool {
			_, failed := connectsTo(r, closed)
			return len(failed) > 0
		})
		p.Restore(t)
		expect(t, states, session.Reconnected)
		ok, failed := connectsTo(rec, closed)
		assert.Empty(t, ok)
		require.NotEmpty(t, failed)
		ok, _ = connectsTo(rec, p.Addr())
		assert.NotEmpty(t, ok)
	})
}
