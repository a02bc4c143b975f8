package session

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// How far the client trusts its session.
//
// The server expires a session one session timeout t (rounded up to its
// tick) after it last heard from the client. Bytes the client reads prove
// nothing about that: the server keeps sending watch notifications to a
// client it no longer hears. What proves it is a reply: the server read the
// request it answers after the client sent it. So the client keeps, per
// session, the send time of the latest request (pings included) whose reply
// came back, "heard", on its own monotonic clock, and trusts the session
//
//   - under SuspendedIsLost, until heard + 2/3 t: the watchdog then reports
//     Suspended and drops the connection, at least t/3 before the server may
//     expire the session;
//   - under OnlyLostIsLost, until heard + t - recipes.DriftMargin(t), across
//     suspensions.
//
// A server cut off from its leader answers for up to the ensemble's
// syncLimit × tickTime (WithServerLag: lag) while the leader no longer
// hears of the session: a reply then proves the server heard the session
// as of its send time less lag, and both windows end lag sooner (the
// default policy's at t - lag - recipes.DriftMargin(t) when that comes
// before 2/3 t).
//
// Every check of a session's trust (Session.Err, used by the recipes before
// they grant a lock, whether after a listing or on a watch notification) and
// every timer that ends a session value use that rule. go-zookeeper pings
// every t/3; the watchdog adds a request of its own whenever no reply has
// come for t/6, so that a healthy session is rarely more than t/6 behind.

// suspendAfter: no reply to a request sent in the last 2/3 t means the
// connection cannot be trusted: Suspended, and the connection is dropped.
func suspendAfter(t time.Duration) time.Duration { return t * 2 / 3 }

// keepaliveAfter: with no reply to a request sent in the last t/6, the
// watchdog sends one.
func keepaliveAfter(t time.Duration) time.Duration { return t / 6 }

// trustWindow is how long after heard a session value of policy p stays
// trusted, with a server that may answer for lag after its leader stopped
// hearing of the session.
func trustWindow(p ErrorPolicy, t, lag time.Duration) time.Duration {
	last := t - lag - recipes.DriftMargin(t)
	if p == OnlyLostIsLost {
		return last
	}
	return min(suspendAfter(t), last)
}

// epoch anchors mono: time.Since reads the monotonic clock, immune to
// wall-clock steps.
var epoch = time.Now()

// mono is the monotonic time since the process started.
func mono() time.Duration { return time.Since(epoch) }

// liveness is shared by a client's connections.
type liveness struct {
	requested  time.Duration // the session timeout asked for
	lag        time.Duration // WithServerLag
	log        *slog.Logger
	trace      *recipes.Trace // told of every connection attempt
	servers    atomic.Int32   // server addresses, once resolved (hostProvider)
	negotiated atomic.Int64   // the session timeout the server granted, 0 until known
	conn       atomic.Pointer[trackedConn]
	tap        zxidTap                      // creates' zxids, read off the replies
	secure     *tlsDialer                   // WithTLS; nil: plain TCP
	lastFail   atomic.Pointer[attemptError] // the most telling since the last connect response, for Connect's error
	tlsWarned  tlsWarnings                  // TLS failures logged at Warn since the last connect response

	mu    sync.Mutex
	heard heardAt
}

// heardAt: the server heard session at or after at (mono).
type heardAt struct {
	session int64
	at      time.Duration
}

// noteHeard records that the server answered a request of session sent at
// at, on conn. Only the current connection counts.
func (l *liveness) noteHeard(conn *trackedConn, session int64, at time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn.Load() == conn && (session != l.heard.session || at > l.heard.at) {
		l.heard = heardAt{session, at}
	}
}

// lastHeard returns the send time of the latest request of session id that
// the server answered; false when none is known.
func (l *liveness) lastHeard(id int64) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id == 0 || l.heard.session != id {
		return 0, false
	}
	return l.heard.at, true
}

// timeout is the negotiated session timeout, or requested until known.
func (l *liveness) timeout(requested time.Duration) time.Duration {
	if n := l.negotiated.Load(); n > 0 {
		return time.Duration(n)
	}
	return requested
}

// watch runs the watchdog until the client is closed: it enforces the trust
// rule above with timers set at its deadlines, and sends keepalives.
func (c *Client) watch() {
	defer c.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		c.mu.Lock()
		wait, drop := c.checkLivenessLocked(mono())
		changed := c.changed
		c.mu.Unlock()
		if tc := c.live.conn.Load(); drop && tc != nil {
			_ = tc.Conn.Close() // go-zookeeper reconnects
		}
		timer.Reset(wait)
		select {
		case <-c.done:
			return
		case <-timer.C:
		case <-changed:
		case <-c.kick:
		}
	}
}

// idleCheck is how often the watchdog looks when no deadline is running.
const idleCheck = time.Second

// checkLivenessLocked applies the trust rule at now: it reports Suspended
// (drop: the caller closes the connection) or ends the session value when
// their deadline has passed, starts a keepalive when one is due, and returns
// how long to wait until the next deadline.
func (c *Client) checkLivenessLocked(now time.Duration) (wait time.Duration, drop bool) {
	wait = idleCheck
	if c.closed {
		return wait, false
	}
	t := c.live.timeout(c.cfg.sessionTimeout)
	heard, ok := c.live.lastHeard(c.m.sessionID)
	if c.m.state.connected() {
		switch due := heard + trustWindow(SuspendedIsLost, t, c.live.lag); {
		case !ok || now >= due:
			c.log.Warn("no reply from zookeeper to a request sent within the trust window (2/3 of the session timeout, or less with WithServerLag); dropping the connection",
				"since", (now - heard).Round(time.Millisecond), "session timeout", t)
			c.applyLocked(inDisconnected, 0)
			return 0, true
		default:
			wait = min(wait, due-now)
		}
		if due := heard + keepaliveAfter(t); now < due {
			wait = min(wait, due-now)
		} else {
			c.keepaliveLocked()
		}
	}
	if c.m.live && c.cfg.policy == OnlyLostIsLost {
		switch due := heard + trustWindow(OnlyLostIsLost, t, c.live.lag); {
		case !ok || now >= due:
			c.applyLocked(inTrustTimeout, 0)
		default:
			wait = min(wait, due-now)
		}
	}
	return max(wait, 0), false
}

// keepaliveLocked sends one cheap request (an exists of "/") on the current
// connection unless one is already out: its reply renews the trust.
func (c *Client) keepaliveLocked() {
	conn := c.conn
	if conn == nil || c.keepaliveOut {
		return
	}
	c.keepaliveOut = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_, _, _ = conn.Exists("/")
		c.mu.Lock()
		c.keepaliveOut = false
		c.mu.Unlock()
		select { // look again: the next keepalive is due t/6 after this one
		case c.kick <- struct{}{}:
		default:
		}
	}()
}

// reportConnect tells the trace of an attempt to connect to server begun
// at start: err is nil once the server answered the handshake.
func (l *liveness) reportConnect(server string, start time.Time, err error) {
	if l != nil && l.trace != nil && l.trace.Connect != nil {
		l.trace.Connect(recipes.ConnectInfo{Server: server, Latency: time.Since(start), Err: err})
	}
}

// expiresAt is when the server may expire session id at the earliest, as
// the client knows it: the send time of the latest request it answered,
// less the server's lag, plus the session timeout, as a wall-clock time
// (with the monotonic reading); false when nothing was heard of id.
func (l *liveness) expiresAt(id int64) (time.Time, bool) {
	at, ok := l.lastHeard(id)
	if !ok {
		return time.Time{}, false
	}
	return epoch.Add(at - l.lag + l.timeout(l.requested)), true
}
