package session

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// State is the client's connection state, as Curator's ConnectionState.
type State int

// The connection states.
const (
	// Connecting: before the first session (never reported).
	Connecting State = iota
	// Connected: the first session was established.
	Connected
	// Suspended: the connection dropped; the session may still live.
	Suspended
	// Reconnected: connected again, to the same session or, after Lost, a
	// new one (StateChange.SessionID tells).
	Reconnected
	// Lost: the session expired, or stayed suspended for longer than the
	// session timeout (simulated expiry). A new session follows.
	Lost
	// ReadOnly: connected to a server in read-only mode.
	ReadOnly
	// Closed: Close was called. Last state.
	Closed
)

var stateNames = [...]string{"Connecting", "Connected", "Suspended", "Reconnected", "Lost", "ReadOnly", "Closed"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// connected reports whether s is a state with a live connection.
func (s State) connected() bool { return s == Connected || s == Reconnected || s == ReadOnly }

// StateChange is one transition, delivered in order to every subscriber.
type StateChange struct {
	State     State
	SessionID int64     // the session the state refers to (0 if none)
	Time      time.Time // when the client saw it
	Err       error     // for Suspended, Lost and Closed: why
}

// ErrorPolicy says when a session value stops being trusted.
type ErrorPolicy int

const (
	// SuspendedIsLost (the default, Curator's standard policy): a session
	// value ends as soon as the connection is suspended, which the client
	// reports at the latest 2/3 of a session timeout after the send time of
	// the latest request the server answered, and 3/4 of one after the send
	// time of the latest request the ensemble's leader is proven to have
	// heard; a reconnection to the same session brings a new value with the
	// same ID.
	SuspendedIsLost ErrorPolicy = iota
	// OnlyLostIsLost: a session value survives a suspension that ends in
	// time. It ends when the session is lost, or one session timeout less
	// recipes.DriftMargin after the send time of the latest request the
	// ensemble's leader is proven to have heard: the leader may expire the
	// session one session timeout after it last heard of it, and a reply
	// proves only that the member that sent it heard the request.
	OnlyLostIsLost
)

// input is what drives the state machine.
type input int

const (
	inHasSession input = iota // zk StateHasSession, with a session id
	inDisconnected
	inUnproven // connected, but no proof that the leader heard the session in time
	inExpired
	inReadOnly
	inSuspendTimeout // suspended for the whole session timeout
	inTrustTimeout   // suspended for the window OnlyLostIsLost allows
	inClose
)

// actions is what the client must do after a transition.
type actions struct {
	changes      []StateChange // report these, in order
	endSession   error         // end the current session value with this cause
	newSession   bool          // start a new session value for the session id
	startTimers  bool          // start the suspension timers
	stopTimers   bool          // stop them
	replaceConn  bool          // close the connection and open a new one (new session)
	sessionIDSet int64         // the session id to record, when newSession
}

// machine is the pure connection state machine: no I/O, no clock.
type machine struct {
	state     State
	sessionID int64
	live      bool // a session value is live
	policy    ErrorPolicy
}

// step applies one input and returns what to do.
func (m *machine) step(in input, id int64, now time.Time) actions {
	var a actions
	report := func(s State, sid int64, err error) {
		m.state = s
		a.changes = append(a.changes, StateChange{State: s, SessionID: sid, Time: now, Err: err})
	}
	endLive := func(cause error) {
		if m.live {
			m.live = false
			a.endSession = cause
		}
	}
	if m.state == Closed {
		return a
	}
	switch in {
	case inHasSession:
		switch {
		case m.state == Connecting:
			report(Connected, id, nil)
		case m.state == Suspended && id == m.sessionID:
			report(Reconnected, id, nil)
		case m.state == Lost || m.state == Suspended:
			// A new session: the old one expired while we were away.
			endLive(fmt.Errorf("%w: expired by the server", ErrSessionLost))
			if m.state == Suspended {
				report(Lost, m.sessionID, fmt.Errorf("%w: expired by the server", ErrSessionLost))
			}
			report(Reconnected, id, nil)
		case m.state == ReadOnly:
			report(Reconnected, id, nil)
		default:
			return a // already connected to this session
		}
		a.stopTimers = true
		m.sessionID = id
		if !m.live {
			m.live = true
			a.newSession = true
			a.sessionIDSet = id
		}
	case inReadOnly:
		if m.state != ReadOnly {
			report(ReadOnly, m.sessionID, nil)
		}
	case inDisconnected, inUnproven:
		if !m.state.connected() {
			return a
		}
		err := fmt.Errorf("%w: connection to ZooKeeper lost", ErrSuspended)
		if in == inUnproven {
			err = fmt.Errorf("%w: no proof that the ensemble's leader heard the session within 3/4 of the session timeout "+
				"(the server may be cut off from the quorum); connection dropped", ErrSuspended)
		}
		report(Suspended, m.sessionID, err)
		a.startTimers = true
		if m.policy == SuspendedIsLost {
			endLive(err)
		}
	case inTrustTimeout:
		if m.state == Suspended {
			endLive(fmt.Errorf("%w: suspended past the time the server may keep the session "+
				"(no proof that the ensemble's leader heard the session within the session timeout, less the drift margin)", ErrSessionLost))
		}
	case inExpired, inSuspendTimeout:
		if m.state == Lost || m.state == Connecting {
			return a
		}
		why := "expired by the server"
		if in == inSuspendTimeout {
			why = "suspended for longer than the session timeout"
			a.replaceConn = true
		}
		err := fmt.Errorf("%w: %s", ErrSessionLost, why)
		endLive(err)
		report(Lost, m.sessionID, err)
		a.stopTimers = true
	case inClose:
		endLive(ErrClosed)
		report(Closed, m.sessionID, ErrClosed)
		a.stopTimers = true
	}
	return a
}

// inputOf maps a go-zookeeper session event to a machine input.
func inputOf(s zk.State) (input, bool) {
	switch s {
	case zk.StateHasSession:
		return inHasSession, true
	case zk.StateDisconnected:
		return inDisconnected, true
	case zk.StateExpired:
		return inExpired, true
	case zk.StateConnectedReadOnly:
		return inReadOnly, true
	}
	return 0, false
}
