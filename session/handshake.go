package session

import (
	"context"
	"errors"
	"fmt"
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
	t.l.reportConnect(t.hs.server, t.hs.start, nil)
}

// noteHandshakeTimeout reports a read that failed before the connect
// response came (the attempt failed), and logs a member that accepted the
// connection and did not answer within the bound: the operator's clue to a
// sick member.
func (t *trackedConn) noteHandshakeTimeout(err error) {
	if t.hs.done.Load() {
		return
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		if !t.hs.failed.Swap(true) {
			t.l.attemptFailed(t.hs.server, t.hs.start, fmt.Errorf("handshake: %w", err))
		}
		return
	}
	if !t.hs.failed.Swap(true) {
		t.l.attemptFailed(t.hs.server, t.hs.start,
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
// own dial timeout), makes the TLS handshake under WithTLS, and wraps the
// connection.
func (l *liveness) dialTracked(network, address string, timeout time.Duration) (*trackedConn, error) {
	bound := l.handshakeBound()
	start := time.Now()
	by := start.Add(bound)
	c, err := net.DialTimeout(network, address, min(timeout, bound))
	if err != nil {
		l.attemptFailed(address, start, err)
		return nil, err
	}
	if err := c.SetDeadline(by); err != nil {
		c.Close()
		return nil, err
	}
	if l.secure != nil {
		// Within the bound (the deadline just set), and under the
		// tracking: the frames it splits are ZooKeeper's, inside TLS.
		if c, err = l.secure.handshake(c, address); err != nil {
			if l.log != nil {
				l.log.Warn("zookeeper TLS handshake failed; trying the next server", "server", address, "err", err)
			}
			l.attemptFailed(address, start, err)
			return nil, err
		}
	}
	t := &trackedConn{Conn: c, l: l}
	t.hs.by, t.hs.start, t.hs.server = by, start, address
	return t, nil
}

// attemptError is a failed connection attempt: the server, and why.
type attemptError struct {
	server string
	err    error
}

func (e *attemptError) Error() string { return e.server + ": " + e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// attemptFailed reports the failed attempt to connect to server begun at
// start, and keeps it as the last failure (Connect names it when it gives
// up).
func (l *liveness) attemptFailed(server string, start time.Time, err error) {
	l.lastFail.Store(&attemptError{server, err})
	l.reportConnect(server, start, err)
}

// hostProvider is go-zookeeper's DNS host provider (names resolved, the
// addresses shuffled, each tried in turn) with one change: go-zookeeper
// pauses a second before it tries again the server it was last connected
// to, even when that server has not been tried since the disconnection. So
// a disconnection from B in [A B], with A sick, cost A's attempt, a second,
// then B. Here the pause comes only after every address has failed once
// since the last connection (or the last pause).
type hostProvider struct {
	dns *zk.DNSHostProvider
	l   *liveness

	mu     sync.Mutex
	failed int  // attempts that failed since the last connection or pause
	fresh  bool // the next attempt follows a connection (or the start), not a failure
}

var _ zk.HostProvider = (*hostProvider)(nil)

func newHostProvider(l *liveness) *hostProvider {
	return &hostProvider{dns: zk.NewDNSHostProvider(), l: l, fresh: true}
}

// Init resolves the servers as go-zookeeper's DNSHostProvider does, noting
// the host each address comes from (WithTLS verifies a server's certificate
// for the host the server list names), and how many addresses there are.
func (p *hostProvider) Init(servers []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	var addrs []string
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
			addr := net.JoinHostPort(ip, port)
			p.l.secure.learn(addr, host)
			addrs = append(addrs, addr)
		}
	}
	if err := p.dns.Init(addrs); err != nil { // IP addresses: it looks nothing up
		return err
	}
	p.l.servers.Store(int32(p.dns.Len()))
	return nil
}

// lookupTimeout bounds the resolution of the server list, as go-zookeeper's
// DNSHostProvider does.
const lookupTimeout = 3 * time.Second

// Len is the number of addresses.
func (p *hostProvider) Len() int { return p.dns.Len() }

// Next returns the next address, and retryStart (pause first) when every
// address has failed since the last connection or pause.
func (p *hostProvider) Next() (string, bool) {
	server, _ := p.dns.Next()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.fresh {
		p.failed++
	}
	p.fresh = false
	if p.failed >= p.dns.Len() {
		p.failed = 0
		return server, true
	}
	return server, false
}

// Connected notes a connection that completed its handshake.
func (p *hostProvider) Connected() {
	p.dns.Connected()
	p.mu.Lock()
	p.failed, p.fresh = 0, true
	p.mu.Unlock()
}
