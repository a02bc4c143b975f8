package session

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// A member that accepts connections and never answers (a JVM in a long GC
// pause, a stopped process whose kernel still completes TCP handshakes, a
// member loading its snapshot, a stalled disk) must not cost the session.
// go-zookeeper gives the connect handshake 10 × 2/3 of the session timeout,
// more than six session timeouts; ZooKeeper's Java client gives it the
// session timeout divided by the number of servers and moves on. Here a
// connection attempt, from the dial to the connect response, gets
// handshakeBound; then the connection is abandoned and the next server is
// tried at once.

// handshakeBound is how long one connection attempt may take, from the dial
// to the connect response, with t the session timeout and n the number of
// server addresses: t/n, as ZooKeeper's Java client, but never more than
// t/3, so that a reconnection that meets one sick member still completes
// within 2/3 t plus one attempt after the client last heard from the
// server: before the server may expire the session.
func handshakeBound(t time.Duration, n int) time.Duration {
	return t / time.Duration(max(n, 3))
}

// handshake is a connection's bound on its connect handshake. While the
// connect response has not come, every deadline go-zookeeper sets is
// clamped to it (go-zookeeper clears its deadlines between reads, and sets
// none on the body of the response).
type handshake struct {
	by     time.Time // when the attempt is abandoned
	start  time.Time // when it began (the dial)
	server string    // the address dialed
	host   string    // the host the server list names it by
	done   atomic.Bool
	failed atomic.Bool // the attempt was reported failed
}

// clamp returns the deadline to set in place of d.
func (h *handshake) clamp(d time.Time) time.Time {
	if h.done.Load() || h.by.IsZero() {
		return d
	}
	if d.IsZero() || d.After(h.by) {
		return h.by
	}
	return d
}

// SetDeadline, SetReadDeadline and SetWriteDeadline keep go-zookeeper's
// deadlines within the handshake's bound until the connect response.
func (t *trackedConn) SetDeadline(d time.Time) error { return t.Conn.SetDeadline(t.hs.clamp(d)) }

func (t *trackedConn) SetReadDeadline(d time.Time) error {
	return t.Conn.SetReadDeadline(t.hs.clamp(d))
}

func (t *trackedConn) SetWriteDeadline(d time.Time) error {
	return t.Conn.SetWriteDeadline(t.hs.clamp(d))
}

// handshakeDone lifts the bound once the connect response has come. The
// handshake runs on one goroutine of go-zookeeper's (it writes the request,
// then reads the response, and starts its send and receive loops after),
// so no deadline of go-zookeeper's own is being overridden here.
func (t *trackedConn) handshakeDone() {
	if t.hs.done.Swap(true) || t.Conn == nil { // nil: a unit test's wrapper
		return
	}
	_ = t.Conn.SetDeadline(time.Time{})
	t.l.lastFail.Store(nil)
	t.l.tlsWarned.reset()
	t.l.refusals.reset()
	t.l.reportConnect(t.hs.server, t.hs.start, nil)
}

// noteHandshakeTimeout reports a read that failed before the connect
// response came (the attempt failed), and logs a member that accepted the
// connection and did not answer within the bound: the operator's clue to a
// sick member. On a TLS connection the failure may be the server's TLS
// alert: under TLS 1.3 a server judges the client's certificate after the
// client's handshake has returned, and refuses it on the first read.
func (t *trackedConn) noteHandshakeTimeout(err error) {
	if t.hs.done.Load() {
		return
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		if _, alert := remoteAlert(err); alert && t.l.secure != nil {
			err = t.l.secure.explain(err)
			if !t.hs.failed.Swap(true) {
				t.l.logTLSFailure(t.hs.server, err)
				t.l.attemptFailed(t.hs.server, t.hs.host, t.hs.start, failedTLS, fmt.Errorf("handshake: %w", err))
			}
			return
		}
		if !t.hs.failed.Swap(true) {
			t.l.attemptFailed(t.hs.server, t.hs.host, t.hs.start, failedHandshake, fmt.Errorf("handshake: %w", err))
		}
		return
	}
	if !t.hs.failed.Swap(true) {
		t.l.attemptFailed(t.hs.server, t.hs.host, t.hs.start, failedHandshake,
			fmt.Errorf("no answer to the handshake within %v: %w", t.l.handshakeBound(), err))
	}
	if t.l.log != nil {
		t.l.log.Warn("zookeeper server accepted the connection but did not answer the handshake in time; trying the next server",
			"server", t.RemoteAddr().String(), "bound", t.l.handshakeBound())
	}
}

// handshakeBound is the bound of the client's next connection attempt: the
// granted session timeout once known, else the requested one.
func (l *liveness) handshakeBound() time.Duration {
	return handshakeBound(l.timeout(l.requested), int(l.servers.Load()))
}

// dialTracked dials address within the handshake's bound (and go-zookeeper's
// own dial timeout), makes the TLS handshake under WithTLS (verifying the
// server as host, or when it is "" as address's host), and wraps the
// connection.
func (l *liveness) dialTracked(network, address, host string, timeout time.Duration) (*trackedConn, error) {
	bound := l.handshakeBound()
	start := time.Now()
	by := start.Add(bound)
	c, err := net.DialTimeout(network, address, min(timeout, bound))
	if err != nil {
		l.attemptFailed(address, host, start, failedDial, err)
		return nil, err
	}
	if err := c.SetDeadline(by); err != nil {
		c.Close()
		return nil, err
	}
	if l.secure != nil {
		// Within the bound (the deadline just set), and under the
		// tracking: the frames it splits are ZooKeeper's, inside TLS.
		if host == "" {
			host, _, _ = net.SplitHostPort(address)
		}
		if c, err = l.secure.handshake(c, host); err != nil {
			l.logTLSFailure(address, err)
			l.attemptFailed(address, host, start, failedTLS, err)
			return nil, err
		}
	}
	t := &trackedConn{Conn: c, l: l}
	t.hs.by, t.hs.start, t.hs.server, t.hs.host = by, start, address, host
	return t, nil
}

// failure is how much a failed connection attempt tells of why the client
// cannot connect. Connect names the most telling failure since the last
// connection, not the last one: a name that resolves to 127.0.0.1 and ::1,
// a server listening on the first, and a certificate the client refuses
// fail in turn with the certificate and a refused connection; the
// certificate is the news.
type failure int

const (
	failedDial      failure = iota // no connection: refused, unreachable, timed out
	failedHandshake                // connected, and no connect response: a silent or closing server
	failedTLS                      // the TLS handshake failed, or a TLS alert ended the connect handshake
)

// attemptError is a failed connection attempt: the server, and why.
type attemptError struct {
	server string
	err    error
	kind   failure
}

func (e *attemptError) Error() string { return e.server + ": " + e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// attemptFailed reports the failed attempt to connect to server (named
// host in the server list) begun at start, keeps it for Connect's error
// unless a more telling failure came since the last connection, and
// notes a refusal (refusals).
func (l *liveness) attemptFailed(server, host string, start time.Time, kind failure, err error) {
	e := &attemptError{server, err, kind}
	l.refusals.note(server, host, e, int(l.servers.Load()))
	for {
		kept := l.lastFail.Load()
		if (kept != nil && kept.kind > kind) || l.lastFail.CompareAndSwap(kept, e) {
			break
		}
	}
	l.reportConnect(server, start, err)
}

// hostProvider resolves the servers and gives their addresses in turn, as
// go-zookeeper's DNSHostProvider does (every name resolved once, the
// addresses shuffled), with two changes:
//
//   - each address is kept with the host the server list names it by, and
//     Next tells the TLS dialer which (WithTLS verifies a certificate for
//     it): two entries that resolve to one address ("localhost:2281,
//     127.0.0.1:2281", names behind one load balancer) are two targets,
//     each verified as its own name;
//   - go-zookeeper pauses a second before it tries again the server it was
//     last connected to, even when that server has not been tried since the
//     disconnection. So a disconnection from B in [A B], with A sick, cost
//     A's attempt, a second, then B. Here the pause comes only after every
//     address has failed once since the last connection (or the last
//     pause).
type hostProvider struct {
	l    *liveness
	next *nextTarget // its connection's: Next sets it for the dialer

	mu      sync.Mutex
	targets []target // shuffled; not changed after Init
	curr    int      // the target Next gave last
	failed  int      // attempts that failed since the last connection or pause
	fresh   bool     // the next attempt follows a connection (or the start), not a failure
}

var _ zk.HostProvider = (*hostProvider)(nil)

func newHostProvider(l *liveness, next *nextTarget) *hostProvider {
	return &hostProvider{l: l, next: next, curr: -1, fresh: true}
}

// Init resolves the servers, keeping each address with the host it comes
// from, shuffles them, and notes how many addresses there are.
func (p *hostProvider) Init(servers []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	var targets []target
	for _, server := range servers {
		host, port, err := net.SplitHostPort(server)
		if err != nil {
			return err
		}
		ips, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil {
			return err
		}
		for _, ip := range ips {
			targets = append(targets, target{addr: net.JoinHostPort(ip, port), host: host})
		}
	}
	if len(targets) == 0 {
		return fmt.Errorf("no addresses found for %q", servers)
	}
	// Spread the clients of an ensemble over its members.
	rand.Shuffle(len(targets), func(i, j int) { targets[i], targets[j] = targets[j], targets[i] })
	p.mu.Lock()
	p.targets, p.curr = targets, -1
	p.mu.Unlock()
	p.l.servers.Store(int32(len(targets)))
	return nil
}

// lookupTimeout bounds the resolution of the server list, as go-zookeeper's
// DNSHostProvider does.
const lookupTimeout = 3 * time.Second

// Len is the number of addresses.
func (p *hostProvider) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.targets)
}

// Next returns the next address, and retryStart (pause first) when every
// address has failed since the last connection or pause. It tells the TLS
// dialer the address's target: go-zookeeper dials the address at once, on
// this goroutine.
func (p *hostProvider) Next() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.curr = (p.curr + 1) % len(p.targets)
	t := &p.targets[p.curr]
	p.next.set(t)
	if !p.fresh {
		p.failed++
	}
	p.fresh = false
	if p.failed >= len(p.targets) {
		p.failed = 0
		return t.addr, true
	}
	return t.addr, false
}

// Connected notes a connection that completed its handshake.
func (p *hostProvider) Connected() {
	p.mu.Lock()
	p.failed, p.fresh = 0, true
	p.mu.Unlock()
}
