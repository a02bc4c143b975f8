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
	_, ok := l.lastHeard(sid)
	assert.False(t, ok, "nothing heard before the connect response")

	c.in.feed(connectResp(4000, sid))
	heard, ok := l.lastHeard(sid)
	require.True(t, ok)
	assert.Equal(t, connectAt, heard, "the connect response answers the connect request")
	assert.Equal(t, 4*time.Second, l.timeout(7*time.Second), "negotiated timeout read off the wire")

	c.out.feed(request(1, 4))   // getData
	c.out.feed(request(-2, 11)) // ping
	c.out.feed(request(2, 1))   // create
	c.out.feed(request(-2, 11)) // another ping
	at1, atPing, at2 := pendingAt(t, c, 1), pendingAt(t, c, -2), pendingAt(t, c, 2)

	c.in.feed(jute(nil).i32(xidNotification).i64(-1).i32(0).i32(2).i32(3).str("/a").frame())
	heard, _ = l.lastHeard(sid)
	assert.Equal(t, connectAt, heard, "a notification proves nothing")

	c.in.feed(reply(1, 0))
	heard, _ = l.lastHeard(sid)
	assert.Equal(t, at1, heard)
	c.in.feed(reply(-2, 0))
	heard, _ = l.lastHeard(sid)
	assert.Equal(t, atPing, heard, "a ping reply answers the oldest ping")
	c.in.feed(reply(2, -112)) // session expired
	heard, _ = l.lastHeard(sid)
	assert.Equal(t, atPing, heard, "a reply saying the session expired proves nothing")
	c.in.feed(reply(77, 0)) // unknown xid
	heard, _ = l.lastHeard(sid)
	assert.Equal(t, atPing, heard)
	assert.Less(t, at1, at2)

	_, ok = l.lastHeard(0x66)
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
	heard7, ok := l.lastHeard(7)
	require.True(t, ok)
	old.in.feed(reply(1, 0))
	h, _ := l.lastHeard(7)
	assert.Equal(t, heard7, h, "a reply on a replaced connection does not count")
	_, ok = l.lastHeard(0)
	assert.False(t, ok)
}

func TestTrustWindows(t *testing.T) {
	for _, timeout := range []time.Duration{400 * time.Millisecond, 6 * time.Second, 15 * time.Second, time.Hour} {
		s, o := trustWindow(SuspendedIsLost, timeout, 0), trustWindow(OnlyLostIsLost, timeout, 0)
		assert.Equal(t, timeout*2/3, s)
		assert.Equal(t, suspendAfter(timeout), s, "the default policy trusts until the watchdog suspends")
		assert.Less(t, s, o, "%v: suspended before the OnlyLostIsLost trust ends", timeout)
		assert.Equal(t, timeout-timeout/100-10*time.Millisecond, o)
		assert.Less(t, keepaliveAfter(timeout), s/2, "a keepalive goes out well before the suspension")
	}
}

// A server that may answer for lag after its leader stopped hearing of the
// session ends both windows lag sooner, the default policy's only when
// that comes before 2/3 t.
func TestTrustWindowsWithServerLag(t *testing.T) {
	const timeout, lag = 6 * time.Second, 2 * time.Second
	last := timeout - lag - recipes.DriftMargin(timeout)
	assert.Equal(t, last, trustWindow(OnlyLostIsLost, timeout, lag))
	assert.Equal(t, last, trustWindow(SuspendedIsLost, timeout, lag), "sooner than 2/3 t")
	assert.Equal(t, 10*time.Second, trustWindow(SuspendedIsLost, 15*time.Second, lag), "2/3 t comes first")
	for _, bad := range []time.Duration{-time.Second, 3 * time.Second} {
		_, err := Connect(context.Background(), []string{"127.0.0.1:1"}, WithSessionTimeout(timeout), WithServerLag(bad))
		require.ErrorIs(t, err, ErrInvalidArgument)
		assert.Contains(t, err.Error(), "WithServerLag")
	}
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

// connectedAt puts c in Connected with session sid last heard at heard.
func connectedAt(c *Client, sid int64, heard time.Duration) *Session {
	tc := newTracked(&c.live)
	tc.session = sid
	c.live.noteHeard(tc, sid, heard)
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
		wait, drop := c.checkLivenessLocked(base + 400*time.Millisecond)
		c.mu.Unlock()
		assert.False(t, drop)
		assert.Equal(t, 600*time.Millisecond, wait, "next deadline: a keepalive, t/6 after the last reply")

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
		window := trustWindow(policy, 6*time.Second, 0)
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
