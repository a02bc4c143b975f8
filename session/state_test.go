package session

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type step struct {
	in input
	id int64
	// expected
	states  []State
	end     error // the cause the live session ends with (nil: none)
	newSess bool
	replace bool
}

func runMachine(t *testing.T, policy ErrorPolicy, steps []step) {
	t.Helper()
	m := machine{policy: policy}
	for i, s := range steps {
		a := m.step(s.in, s.id, time.Unix(0, 0))
		var got []State
		for _, ch := range a.changes {
			got = append(got, ch.State)
		}
		assert.Equal(t, s.states, got, "step %d states", i)
		if s.end == nil {
			assert.NoError(t, a.endSession, "step %d must not end the session", i)
		} else {
			assert.ErrorIs(t, a.endSession, s.end, "step %d end cause", i)
		}
		assert.Equal(t, s.newSess, a.newSession, "step %d new session", i)
		assert.Equal(t, s.replace, a.replaceConn, "step %d replace connection", i)
	}
}

func TestMachineSuspendedIsLost(t *testing.T) {
	runMachine(t, SuspendedIsLost, []step{
		{in: inHasSession, id: 1, states: []State{Connected}, newSess: true},
		{in: inHasSession, id: 1}, // duplicate: nothing
		{in: inDisconnected, states: []State{Suspended}, end: ErrSuspended},
		{in: inDisconnected}, // still suspended
		{in: inTrustTimeout}, // already ended
		{in: inHasSession, id: 1, states: []State{Reconnected}, newSess: true},
		{in: inDisconnected, states: []State{Suspended}, end: ErrSuspended},
		{in: inSuspendTimeout, states: []State{Lost}, replace: true},
		{in: inDisconnected},
		{in: inHasSession, id: 2, states: []State{Reconnected}, newSess: true},
		{in: inClose, states: []State{Closed}, end: ErrClosed},
		{in: inHasSession, id: 3}, // nothing after Closed
	})
}

func TestMachineOnlyLostIsLost(t *testing.T) {
	runMachine(t, OnlyLostIsLost, []step{
		{in: inHasSession, id: 1, states: []State{Connected}, newSess: true},
		{in: inDisconnected, states: []State{Suspended}},
		{in: inHasSession, id: 1, states: []State{Reconnected}}, // same value lives on
		{in: inDisconnected, states: []State{Suspended}},
		{in: inTrustTimeout, end: ErrSessionLost}, // value ends, state stays Suspended
		{in: inHasSession, id: 1, states: []State{Reconnected}, newSess: true},
		{in: inDisconnected, states: []State{Suspended}},
		{in: inExpired, states: []State{Lost}, end: ErrSessionLost},
		{in: inExpired},
		{in: inHasSession, id: 7, states: []State{Reconnected}, newSess: true},
	})
}

func TestMachineExpiryNoticedAtReconnect(t *testing.T) {
	// A new session id without an Expired event first: report Lost then
	// Reconnected, and end the old value.
	runMachine(t, OnlyLostIsLost, []step{
		{in: inHasSession, id: 1, states: []State{Connected}, newSess: true},
		{in: inDisconnected, states: []State{Suspended}},
		{in: inHasSession, id: 2, states: []State{Lost, Reconnected}, end: ErrSessionLost, newSess: true},
	})
}

func TestMachineReadOnly(t *testing.T) {
	runMachine(t, SuspendedIsLost, []step{
		{in: inHasSession, id: 1, states: []State{Connected}, newSess: true},
		{in: inReadOnly, states: []State{ReadOnly}},
		{in: inDisconnected, states: []State{Suspended}, end: ErrSuspended},
		{in: inHasSession, id: 1, states: []State{Reconnected}, newSess: true},
	})
}

func TestMachineCloseBeforeConnected(t *testing.T) {
	runMachine(t, SuspendedIsLost, []step{
		{in: inDisconnected},
		{in: inExpired},
		{in: inClose, states: []State{Closed}},
	})
}

func TestInputOf(t *testing.T) {
	for s, want := range map[zk.State]input{
		zk.StateHasSession: inHasSession, zk.StateDisconnected: inDisconnected,
		zk.StateExpired: inExpired, zk.StateConnectedReadOnly: inReadOnly,
	} {
		got, ok := inputOf(s)
		require.True(t, ok, s.String())
		assert.Equal(t, want, got, s.String())
	}
	for _, s := range []zk.State{zk.StateConnecting, zk.StateConnected, zk.StateUnknown} {
		_, ok := inputOf(s)
		assert.False(t, ok, s.String())
	}
}

func TestStateString(t *testing.T) {
	assert.Equal(t, "Suspended", Suspended.String())
	assert.Equal(t, "State(42)", State(42).String())
	assert.True(t, errors.Is(ErrSuspended, ErrSuspended))
}
