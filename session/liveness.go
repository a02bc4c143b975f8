package session

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// How far the client trusts its session.
//
// The server expires a session one session timeout t (rounded up to its
// tick) after it last heard from the client: on an ensemble, after the
// leader last heard of it. Bytes the client reads prove nothing about
// that: the server keeps sending watch notifications to a client it no
// longer hears. What proves it is a reply: the server read the request it
// answers after the client sent it. So the client keeps, per session, two
// send times on its own monotonic clock:
//
//   - heard: of the latest request (pings included) whose reply came back,
//     on the current connection: the member it talks to heard the session
//     then;
//   - proven: of the latest request that the ensemble's leader is proven
//     to have heard (proof.go): a member cut off from the quorum goes on
//     answering for up to syncLimit × tickTime, but cannot prove.
//
// It trusts the session
//
//   - under SuspendedIsLost, until heard + 2/3 t and proven + 3/4 t: the
//     watchdog then reports Suspended and drops the connection, at least
//     t/4 before the server may expire the session (t/3 when the member
//     stopped answering);
//   - under OnlyLostIsLost, until proven + t - recipes.DriftMargin(t),
//     across suspensions; the connection is dropped at the same moments,
//     so that the client moves to a member that can prove.
//
// Every check of a session's trust (Session.Err, used by the recipes before
// they grant a lock, whether after a listing or on a watch notification) and
// every timer that ends a session value use that rule. go-zookeeper pings
// every t/3; the watchdog sends a round of proof a ping period after the
// last write was answered (at most 4 syncs and 4 writes per session
// timeout, none while the client's own writes prove it), so that a healthy
// session is proven at most about t/2 behind, and a request of its own
// whenever no reply has come for t/3.

// suspendAfter: no reply to a request sent in the last 2/3 t means the
// connection cannot be trusted: Suspended, and the connection is dropped.
func suspendAfter(t time.Duration) time.Duration { return t * 2 / 3 }

// unprovenAfter: no proof that the leader heard a request sent in the
// last 3/4 t means the member may be cut off from the quorum: Suspended,
// and the connection is dropped. Proofs run at most two ping periods
// (t/2) behind, so a healthy member always has t/4 to spare.
func unprovenAfter(t time.Duration) time.Duration { return t * 3 / 4 }

// keepaliveAfter: with no reply to a request sent in the last t/3, the
// watchdog sends one. The rounds of proof (a period, at most t/4, after
// the last write) and go-zookeeper's pings (t/3) keep replies coming: a
// keepalive goes out only when neither does, well before 2/3 t.
func keepaliveAfter(t time.Duration) time.Duration { return t / 3 }

// trustedUntil is until when a session value of policy p is trusted, from
// heard and proven (mono), at session timeout t.
func trustedUntil(p ErrorPolicy, t, heard, proven time.Duration) time.Duration {
	if p == OnlyLostIsLost {
		return proven + t - recipes.DriftMargin(t)
	}
	return min(heard+suspendAfter(t), proven+unprovenAfter(t))
}

// epoch anchors mono: time.Since reads the monotonic clock, immune to
// wall-clock steps.
var epoch = time.Now()

// mono is the monotonic time since the process started.
func mono() time.Duration { return time.Since(epoch) }

// liveness is shared by a client's connections.
type liveness struct {
	requested  time.Duration // the session timeout asked for
	tick       time.Duration // WithServerTick; 0: at most half the session timeout
	log        *slog.Logger
	trace      *ClientTrace // told of every connection attempt
	servers    atomic.Int32 // server addresses, once resolved (hostProvider)
	negotiated atomic.Int64 // the session timeout the server granted, 0 until known
	conn       atomic.Pointer[trackedConn]
	tap        zxidTap                      // creates' zxids, read off the replies
	secure     *tlsDialer                   // WithTLS; nil: plain TCP
	lastFail   atomic.Pointer[attemptError] // the most telling since the last connect response, for Connect's error
	tlsWarned  tlsWarnings                  // TLS failures logged at Warn since the last connect response
	refusals   refusals                     // the attempts refused since then (refused.go)

	mu     sync.Mutex
	heard  heardAt
	proven heardAt // the leader heard session at or after at (proof.go)
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

// noteProven records that the leader heard session at or after at, as
// proven on conn. Only the current connection counts.
func (l *liveness) noteProven(conn *trackedConn, session int64, at time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn.Load() == conn && (session != l.proven.session || at > l.proven.at) {
		l.proven = heardAt{session, at}
	}
}

// lastHeard returns the send time of the latest request of session id that
// the server answered, and of the latest that the leader is proven to have
// heard; false when either is unknown.
func (l *liveness) lastHeard(id int64) (heard, proven time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id == 0 || l.heard.session != id || l.proven.session != id {
		return 0, 0, false
	}
	return l.heard.at, l.proven.at, true
}

// tickError says why the session timeout granted, t, is too short for
// the servers' tickTime (WithServerTick); nil when it is long enough.
func (l *liveness) tickError(t time.Duration) error {
	if l.tick == 0 || t >= 2*l.tick {
		return nil
	}
	return fmt.Errorf("the session timeout the server granted (%v) is below 2 × its tickTime (WithServerTick(%v)): "+
		"the client cannot prove the ensemble's leader hears the session in time; ask for a session timeout of at least %v "+
		"(the server clamps it to its minSessionTimeout..maxSessionTimeout)", t, l.tick, 2*l.tick)
}

// period is the bound P of the leader's ping period (proof.go): half the
// servers' tickTime, which is at most half the session timeout unless
// WithServerTick says what it is.
func (l *liveness) period() time.Duration {
	if l.tick > 0 {
		return l.tick / 2
	}
	return l.timeout(l.requested) / 4
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
		tc := c.live.conn.Load() // the one judged: a successor dialed meanwhile is not dropped
		wait, drop := c.checkLivenessLocked(mono())
		changed := c.changed
		c.mu.Unlock()
		if drop && tc != nil {
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
// their deadline has passed, starts a keepalive or a round of proof when
// one is due, and returns how long to wait until the next deadline.
func (c *Client) checkLivenessLocked(now time.Duration) (wait time.Duration, drop bool) {
	wait = idleCheck
	if c.closed {
		return wait, false
	}
	t := c.live.timeout(c.cfg.sessionTimeout)
	heard, proven, ok := c.live.lastHeard(c.m.sessionID)
	if c.m.state.connected() {
		in, why := inDisconnected, "no reply from zookeeper to a request sent within 2/3 of the session timeout"
		if ok && proven+unprovenAfter(t) < heard+suspendAfter(t) {
			in, why = inUnproven, "no proof that the ensemble's leader heard a request sent within 3/4 of the session timeout (the server may be cut off from the quorum)"
		}
		switch due := min(heard+suspendAfter(t), proven+unprovenAfter(t)); {
		case !ok || now >= due:
			c.log.Warn(why+"; dropping the connection",
				"since", (now - min(heard, proven)).Round(time.Millisecond), "session timeout", t)
			c.applyLocked(in, 0)
			return 0, true
		default:
			wait = min(wait, due-now)
		}
		if due := heard + keepaliveAfter(t); now < due {
			wait = min(wait, due-now)
		} else {
			c.keepaliveLocked()
		}
		if tc := c.live.conn.Load(); tc != c.roundConn {
			c.proveLocked(tc) // the connection's first: it gives the next one an R
		} else if due := proofDue(proven, c.lastRound, c.live.period(), t, c.roundsOnConn < 2); now < due {
			wait = min(wait, due-now)
		} else {
			c.proveLocked(tc)
		}
	}
	if c.m.live && c.cfg.policy == OnlyLostIsLost {
		switch due := trustedUntil(OnlyLostIsLost, t, heard, proven); {
		case !ok || now >= due:
			c.applyLocked(inTrustTimeout, 0)
		default:
			wait = min(wait, due-now)
		}
	}
	return max(wait, 0), false
}

// proofDue is when the next round of proof is due, with the session
// proven as of proven and the last round of the connection answered at
// lastRound, for a leader ping period bound of period and a session
// timeout t: an interval after the last round (at least a period, lean,
// and a quarter of t), whose sync then leans on that round's write, so
// that the rounds chain and a proof is never more than about two
// intervals old; and, once the chain has begun (not chaining), not before
// proven is an interval and a half old: the client's own writes may keep
// it younger, and spare the rounds.
func proofDue(proven, lastRound, period, t time.Duration, chaining bool) time.Duration {
	interval := max(lean(period), t/4)
	if chaining {
		return lastRound + interval
	}
	return max(proven+interval*3/2, lastRound+interval)
}

// keepaliveLocked sends one cheap request (an exists of "/") on the current
// connection unless one is already out: its reply renews the trust.
func (c *Client) keepaliveLocked() {
	c.requestLocked(&c.keepaliveOut, func(conn *zk.Conn) { _, _, _ = conn.Exists("/") })
}

// proveLocked sends a round of proof (proof.go) on the current connection
// unless one is already out: a sync, then, if it succeeded, a write that
// changes nothing, a multi of one check of "/" at any version (the root
// always exists, and a check needs only read access).
//
// A round that fails (the root unreadable: the check fails, committed all
// the same; a sync refused by a throttled server) counts as a round: the
// next waits its period, so failures never loop.
func (c *Client) proveLocked(tc *trackedConn) {
	if !c.requestLocked(&c.proofOut, func(conn *zk.Conn) {
		if _, err := conn.Sync("/"); err == nil {
			_, _ = conn.Multi(&zk.CheckVersionRequest{Path: "/", Version: -1})
		}
		c.mu.Lock()
		c.lastRound = mono()
		c.mu.Unlock()
	}) {
		return
	}
	if tc != c.roundConn {
		c.roundConn, c.roundsOnConn = tc, 0
	}
	c.roundsOnConn++
}

// requestLocked runs send on the current connection in the background
// unless *out says a previous one is still waiting for its reply, then
// has the watchdog look again; false when it did not start.
func (c *Client) requestLocked(out *bool, send func(*zk.Conn)) bool {
	conn := c.conn
	if conn == nil || *out {
		return false
	}
	*out = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		send(conn)
		c.mu.Lock()
		*out = false
		c.mu.Unlock()
		select { // look again: the next one is due a while after this one
		case c.kick <- struct{}{}:
		default:
		}
	}()
	return true
}

// reportConnect tells the trace of an attempt to connect to server begun
// at start: err is nil once the server answered the handshake.
func (l *liveness) reportConnect(server string, start time.Time, err error) {
	if l != nil && l.trace != nil && l.trace.Connect != nil {
		l.trace.Connect(ConnectInfo{Server: server, Latency: time.Since(start), Err: err})
	}
}

// expiresAt is when the server may expire session id at the earliest, as
// the client knows it: the send time of the latest request the leader is
// proven to have heard, plus the session timeout, as a wall-clock time
// (with the monotonic reading); false when nothing was heard of id.
func (l *liveness) expiresAt(id int64) (time.Time, bool) {
	_, proven, ok := l.lastHeard(id)
	if !ok {
		return time.Time{}, false
	}
	return epoch.Add(proven + l.timeout(l.requested)), true
}
