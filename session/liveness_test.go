package session

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// newTracked returns a connection wrapper (no socket) that is l's current
// connection.
func newTracked(l *liveness) *trackedConn {
	t := &trackedConn{l: l}
	t.out = frames{want: t.wantRequest, done: t.sent}
	t.in = frames{want: wantReply, done: t.received}
	l.conn.Store(t)
	return t
}

func connectResp(timeoutMs int32, session int64) []byte {
	return jute(nil).i32(0).i32(timeoutMs).i64(session).str("passwd").frame()
}

func reply(xid int32, errCode int32) []byte {
	return jute(nil).i32(xid).i64(0x100000001).i32(errCode).frame()
}

func request(xid, op int32) []byte { return jute(nil).i32(xid).i32(op).frame() }

// pendingAt returns the send time noted for the oldest request with xid.
func pendingAt(t *testing.T, c *trackedConn, xid int32) time.Duration {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.pending {
		if r.xid == xid {
			return r.at
		}
	}
	t.Fatalf("xid %d not pending", xid)
	return 0
}

func TestHeardOnlyFromReplies(t *testing.T) {
	var l liveness
	c := newTracked(&l)
	const sid = 0x55
	c.out.feed(jute(nil).i32(0).i64(0).i32(6000).i64(0).str("").frame()) // connect request
	connectAt := c.connectAt
	_, _, ok := l.lastHeard(sid)
	assert.False(t, ok, "nothing heard before the connect response")

	c.in.feed(connectResp(4000, sid))
	heard, proven, ok := l.lastHeard(sid)
	require.True(t, ok)
	assert.Equal(t, connectAt, heard, "the connect response answers the connect request")
	assert.Equal(t, connectAt, proven, "a handshake proves itself")
	assert.Equal(t, 4*time.Second, l.timeout(7*time.Second), "negotiated timeout read off the wire")

	c.out.feed(request(1, 4))   // getData
	c.out.feed(request(-2, 11)) // ping
	c.out.feed(request(2, 1))   // create
	c.out.feed(request(-2, 11)) // another ping
	at1, atPing, at2 := pendingAt(t, c, 1), pendingAt(t, c, -2), pendingAt(t, c, 2)

	c.in.feed(jute(nil).i32(xidNotification).i64(-1).i32(0).i32(2).i32(3).str("/a").frame())
	heard, _, _ = l.lastHeard(sid)
	assert.Equal(t, connectAt, heard, "a notification proves nothing")

	c.in.feed(reply(1, 0))
	heard, _, _ = l.lastHeard(sid)
	assert.Equal(t, at1, heard)
	c.in.feed(reply(-2, 0))
	heard, _, _ = l.lastHeard(sid)
	assert.Equal(t, atPing, heard, "a ping reply answers the oldest ping")
	c.in.feed(reply(2, -112)) // session expired
	heard, _, _ = l.lastHeard(sid)
	assert.Equal(t, atPing, heard, "a reply saying the session expired proves nothing")
	c.in.feed(reply(77, 0)) // unknown xid
	heard, _, _ = l.lastHeard(sid)
	assert.Equal(t, atPing, heard)
	assert.Less(t, at1, at2)

	_, _, ok = l.lastHeard(0x66)
	assert.False(t, ok, "another session was never heard")
}

func TestHeardIgnoresExpiredSessionsAndOldConnections(t *testing.T) {
	var l liveness
	old := newTracked(&l)
	old.out.feed(jute(nil).i32(0).frame())
	old.in.feed(connectResp(6000, 7))
	old.out.feed(request(1, 4))

	cur := newTracked(&l) // a reconnection replaced it
	cur.out.feed(jute(nil).i32(0).frame())
	cur.in.feed(connectResp(0, 0)) // the session expired
	heard7, _, ok := l.lastHeard(7)
	require.True(t, ok)
	old.in.feed(reply(1, 0))
	h, _, _ := l.lastHeard(7)
	assert.Equal(t, heard7, h, "a reply on a replaced connection does not count")
	_, _, ok = l.lastHeard(0)
	assert.False(t, ok)
}

func TestTrustWindows(t *testing.T) {
	for _, timeout := range []time.Duration{400 * time.Millisecond, 6 * time.Second, 15 * time.Second, time.Hour} {
		// Heard and proven together (a handshake): the default policy
		// suspends at 2/3 t, OnlyLostIsLost trusts until t less the margin.
		s, o := trustedUntil(SuspendedIsLost, timeout, 0, 0), trustedUntil(OnlyLostIsLost, timeout, 0, 0)
		assert.Equal(t, suspendAfter(timeout), s)
		assert.Less(t, s, o, "%v: suspended before the OnlyLostIsLost trust ends", timeout)
		assert.Equal(t, timeout-timeout/100-10*time.Millisecond, o)
		assert.LessOrEqual(t, keepaliveAfter(timeout), s/2, "a keepalive goes out well before the suspension")

		// A member that answers but cannot prove: 3/4 t after the last
		// proof under the default policy, t less the margin under the other.
		heard := timeout / 2
		assert.Equal(t, unprovenAfter(timeout), trustedUntil(SuspendedIsLost, timeout, heard, 0))
		assert.Equal(t, o, trustedUntil(OnlyLostIsLost, timeout, heard, 0), "only the proof counts")
		assert.Less(t, unprovenAfter(timeout), o, "%v: dropped before the OnlyLostIsLost trust ends", timeout)
		assert.LessOrEqual(t, 2*(timeout/4), unprovenAfter(timeout)-timeout/4,
			"proofs two ping periods behind leave a quarter of t before the drop")
	}
}

// WithServerTick refuses what is not a tickTime, and a session timeout
// granted below twice the tick is an error naming it.
func TestServerTick(t *testing.T) {
	for _, bad := range []time.Duration{-time.Second, 0} {
		_, err := Connect(context.Background(), []string{"127.0.0.1:1"}, WithServerTick(bad))
		require.ErrorIs(t, err, ErrInvalidArgument)
		assert.Contains(t, err.Error(), "WithServerTick")
	}
	l := liveness{requested: 6 * time.Second}
	assert.Equal(t, 1500*time.Millisecond, l.period(), "without a tick: a quarter of the session timeout")
	assert.NoError(t, l.tickError(time.Second))
	l.tick = 2 * time.Second
	assert.Equal(t, time.Second, l.period(), "with one: half the tick")
	assert.NoError(t, l.tickError(4*time.Second))
	err := l.tickError(3 * time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(3s) is below 2 × its tickTime (WithServerTick(2s))")
}

// quietClient is a Client with no connection, for the watchdog's logic,
// closed at t's cleanup.
func quietClient(t *testing.T, policy ErrorPolicy) *Client {
	cfg := defaultConfig()
	cfg.policy = policy
	cfg.sessionTimeout = 6 * time.Second
	c := &Client{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), changed: make(chan struct{}),
		kick: make(chan struct{}, 1), done: make(chan struct{}), m: machine{policy: policy}}
	t.Cleanup(c.Close)
	return c
}

// connectedAt puts c in Connected with session sid last heard, and proven,
// at heard (as after a handshake).
func connectedAt(c *Client, sid int64, heard time.Duration) *Session {
	return connectedProven(c, sid, heard, heard)
}

// connectedProven puts c in Connected with session sid last heard at heard
// and proven at proven.
func connectedProven(c *Client, sid int64, heard, proven time.Duration) *Session {
	tc := newTracked(&c.live)
	tc.session = sid
	c.live.noteHeard(tc, sid, heard)
	c.live.noteProven(tc, sid, proven)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applyLocked(inHasSession, sid)
	return c.sess
}

func TestWatchdogSuspendsTwoThirdsAfterLastHeard(t *testing.T) {
	for _, policy := range []ErrorPolicy{SuspendedIsLost, OnlyLostIsLost} {
		c := quietClient(t, policy)
		base := mono()
		s := connectedAt(c, 9, base)
		c.mu.Lock()
		wait, drop := c.checkLivenessLocked(base + 1500*time.Millisecond)
		c.mu.Unlock()
		assert.False(t, drop)
		assert.Equal(t, 500*time.Millisecond, wait, "next deadline: a keepalive, t/3 after the last reply")

		c.mu.Lock()
		wait, drop = c.checkLivenessLocked(base + 3*time.Second)
		c.mu.Unlock()
		assert.False(t, drop)
		assert.Equal(t, time.Second, wait, "next deadline: the suspension at 4s")
		assert.Equal(t, Connected, c.State())

		c.mu.Lock()
		_, drop = c.checkLivenessLocked(base + 4*time.Second)
		c.mu.Unlock()
		assert.True(t, drop, "2/3 t after the last reply")
		assert.Equal(t, Suspended, c.State())
		if policy == SuspendedIsLost {
			assert.ErrorIs(t, s.Err(), ErrSuspended)
			continue
		}
		assert.NoError(t, s.Err(), "OnlyLostIsLost: the value outlives the suspension")
		c.mu.Lock()
		wait, _ = c.checkLivenessLocked(base + 5*time.Second)
		c.mu.Unlock()
		assert.Equal(t, time.Second-recipes.DriftMargin(6*time.Second), wait, "next deadline: t less the margin")
		c.mu.Lock()
		_, _ = c.checkLivenessLocked(base + 6*time.Second - recipes.DriftMargin(6*time.Second))
		c.mu.Unlock()
		assert.ErrorIs(t, s.Err(), ErrSessionLost)
		assert.ErrorIs(t, context.Cause(s.Context()), ErrSessionLost)
	}
}

func TestSessionErrReadsTheClock(t *testing.T) {
	for _, policy := range []ErrorPolicy{SuspendedIsLost, OnlyLostIsLost} {
		window := trustedUntil(policy, 6*time.Second, 0, 0)
		s := connectedAt(quietClient(t, policy), 3, mono()-window+time.Hour)
		assert.NoError(t, s.Err())
		until, ok := s.TrustedUntil()
		require.True(t, ok)
		assert.WithinDuration(t, time.Now().Add(time.Hour), until, time.Minute)

		s = connectedAt(quietClient(t, policy), 4, mono()-window-time.Millisecond)
		assert.Error(t, s.Err(), "past the window, before any timer fired")
		assert.NoError(t, s.Context().Err(), "the timer has not run")
	}
}

// A member that goes on answering while nothing proves the leader hears
// the session (a follower cut off from the quorum) is dropped 3/4 t after
// the last proof, with a cause that says so; under OnlyLostIsLost the
// value ends t less the margin after it.
func TestWatchdogDropsWhatItCannotProve(t *testing.T) {
	const timeout = 6 * time.Second
	for _, policy := range []ErrorPolicy{SuspendedIsLost, OnlyLostIsLost} {
		c := quietClient(t, policy)
		base := mono()
		s := connectedProven(c, 9, base+4*time.Second, base) // heard lately, proven long ago
		c.mu.Lock()
		wait, drop := c.checkLivenessLocked(base + 4*time.Second)
		c.mu.Unlock()
		assert.False(t, drop)
		assert.Equal(t, unprovenAfter(timeout)-4*time.Second, wait, "next deadline: 3/4 t after the proof")
		c.mu.Lock()
		_, drop = c.checkLivenessLocked(base + unprovenAfter(timeout))
		c.mu.Unlock()
		require.True(t, drop)
		assert.Equal(t, Suspended, c.State())
		if policy == SuspendedIsLost {
			assert.ErrorIs(t, s.Err(), ErrSuspended)
			assert.Contains(t, context.Cause(s.Context()).Error(), "no proof that the ensemble's leader heard the session")
			continue
		}
		assert.NoError(t, s.Err(), "OnlyLostIsLost: the value outlives the drop")
		c.mu.Lock()
		_, _ = c.checkLivenessLocked(base + timeout - recipes.DriftMargin(timeout))
		c.mu.Unlock()
		assert.ErrorIs(t, context.Cause(s.Context()), ErrSessionLost)
		assert.Contains(t, s.Err().Error(), "no proof that the ensemble's leader heard the session")
	}
}
