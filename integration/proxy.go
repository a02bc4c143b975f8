package integration

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// Bounds of a Proxy.
const (
	// proxyDialTimeout bounds the dial to the server for each connection
	// accepted; a connection whose dial fails is closed.
	proxyDialTimeout = 5 * time.Second
	// proxyRelistenTimeout bounds Restore's retries to listen again on the
	// proxy's address after Cut.
	proxyRelistenTimeout = 5 * time.Second
	// proxyCloseTimeout bounds the wait, at the test's end, for the proxy's
	// goroutines to end; the test fails if they have not.
	proxyCloseTimeout = 10 * time.Second
	// proxyMaxQueued is how many bytes a direction of a connection holds or
	// delays before the proxy stops reading it, so that the sender's writes
	// block, as they would once TCP's windows are full.
	proxyMaxQueued = 4 << 20
	// proxyResetDrain bounds how long a connection reset by ResetAfter waits
	// for the server to close its side; see proxyConn.reset.
	proxyResetDrain = time.Second
)

// noReset is the byte budget of a connection when ResetAfter is off.
const noReset = -1

// Proxy is a TCP fault proxy in front of one server. Clients connect to Addr
// instead of the server; the proxy dials the server for each connection it
// accepts and forwards the bytes both ways, in order, until the test cuts,
// partitions, slows or resets the traffic. It is written on package net only
// and runs in the test process.
//
// The two directions of a connection are named from the client's side:
// toward the server (what the client writes) and toward the client (what the
// server writes). Each is forwarded on its own, and the end of one side's
// stream (its close, or its reset) is forwarded after that side's bytes and
// is subject to the same faults. A half close is forwarded as a half close.
//
// Faults apply at once to the open connections and to those accepted later.
// They combine (a direction can be held and slowed), except Cut, which
// removes the others; Restore removes them all.
type Proxy struct {
	addr     string
	upstream string
	ctx      context.Context // done once the proxy is closed: ends dials
	cancel   context.CancelFunc
	ctl      sync.Mutex     // serialises Cut, Restore and close
	wg       sync.WaitGroup // every goroutine of the proxy

	mu         sync.Mutex   // guards what follows and the state of each conn
	ln         net.Listener // nil while cut, and once closed
	conns      map[*proxyConn]struct{}
	hold       [2]bool          // by direction
	latency    [2]time.Duration // by direction
	resetAfter int64            // byte budget of new connections, or noReset
	closed     bool
}

// NewProxy starts a proxy to upstream listening on a free 127.0.0.1 port;
// t.Cleanup closes it and every connection through it, and fails the test if
// its goroutines do not end.
func NewProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		t.Fatalf("proxy to %s: %v", upstream, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		addr:       ln.Addr().String(),
		upstream:   upstream,
		ctx:        ctx,
		cancel:     cancel,
		conns:      map[*proxyConn]struct{}{},
		resetAfter: noReset,
	}
	p.mu.Lock()
	p.serveLocked(ln)
	p.mu.Unlock()
	t.Cleanup(func() { p.close(t) })
	return p
}

// ProxiedServers puts a proxy in front of every member of z and returns the
// proxies' addresses (a connect string for clients) and the proxies, both in
// member order.
func ProxiedServers(t testing.TB, z *ZK) ([]string, []*Proxy) {
	t.Helper()
	var addrs []string
	var proxies []*Proxy
	for _, s := range z.Servers() {
		p := NewProxy(t, s)
		addrs = append(addrs, p.Addr())
		proxies = append(proxies, p)
	}
	return addrs, proxies
}

// Addr is the proxy's listening address, "127.0.0.1:port"; it stays the same
// across Cut and Restore.
func (p *Proxy) Addr() string { return p.addr }

// Upstream is the address the proxy forwards to.
func (p *Proxy) Upstream() string { return p.upstream }

// Cut closes every connection through the proxy and stops listening, until
// Restore; other faults are removed. Both the client and the server see their
// connection closed (bytes held or delayed by the proxy are dropped), and the
// client's new connections are refused (ECONNREFUSED), as when the server is
// down.
func (p *Proxy) Cut(t testing.TB) {
	t.Helper()
	p.ctl.Lock()
	defer p.ctl.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearFaultsLocked()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.closeLocked()
	}
}

// Blackhole partitions the proxy both ways: HoldToServer and HoldToClient.
// Connections stay open and new ones are accepted (and dialed to the
// server), but neither side hears anything from the other, not even a close,
// until Restore delivers what was held.
func (p *Proxy) Blackhole(t testing.TB) {
	t.Helper()
	p.setFaults(func() { p.hold = [2]bool{true, true} })
}

// HoldToServer partitions the direction toward the server, until Restore.
// The client's writes succeed (up to a few MiB per connection, then they
// block as on a full TCP window), but the server hears nothing of them, nor
// of the client's close; what the server writes reaches the client as
// usual. What is held is kept, as TCP keeps retransmitting it, and Restore
// delivers it in order, then the client's close if it came.
func (p *Proxy) HoldToServer(t testing.TB) {
	t.Helper()
	p.setFaults(func() { p.hold[toServer] = true })
}

// HoldToClient partitions the direction toward the client, until Restore:
// the mirror image of HoldToServer. The server's writes succeed but the
// client hears nothing of them, nor of the server's close; what the client
// writes reaches the server as usual. Restore delivers what was held, in
// order, then the server's close if it came.
func (p *Proxy) HoldToClient(t testing.TB) {
	t.Helper()
	p.setFaults(func() { p.hold[toClient] = true })
}

// Latency delays each direction by d, so a round trip takes 2d longer, until
// Restore. Calling it again replaces d. Each chunk of bytes (and a close) is
// delivered d after the proxy read it, in order; chunks read meanwhile are
// not held back further, so the throughput stays what it was.
func (p *Proxy) Latency(t testing.TB, d time.Duration) {
	t.Helper()
	p.setFaults(func() { p.latency = [2]time.Duration{max(d, 0), max(d, 0)} })
}

// LatencyToServer delays only the direction toward the server by d, as
// Latency does, so a round trip takes d longer. Calling it again replaces d.
func (p *Proxy) LatencyToServer(t testing.TB, d time.Duration) {
	t.Helper()
	p.setFaults(func() { p.latency[toServer] = max(d, 0) })
}

// LatencyToClient delays only the direction toward the client by d, as
// Latency does, so a round trip takes d longer. Calling it again replaces d.
func (p *Proxy) LatencyToClient(t testing.TB, d time.Duration) {
	t.Helper()
	p.setFaults(func() { p.latency[toClient] = max(d, 0) })
}

// ResetAfter closes each connection through the proxy once it has carried n
// more bytes toward the server (counted from this call for open connections,
// from their start for new ones; n <= 0 closes them at once), until Restore.
// The server receives exactly those n bytes, then the end of the stream (a
// close); the client sees its connection closed, and from the moment the
// proxy forwards the n-th byte nothing more reaches the client, not even
// what the proxy was still delaying for it. With n the size of a request,
// the server applies the request and its reply is lost.
func (p *Proxy) ResetAfter(t testing.TB, n int64) {
	t.Helper()
	n = max(n, 0)
	p.setFaults(func() {
		p.resetAfter = n
		for c := range p.conns {
			c.budget = n
		}
	})
}

// Restore removes every fault: what was held is delivered, in order, then a
// held close, and delayed bytes go at once. After Cut the proxy listens again
// on the same address; it fails t if that address cannot be bound again
// within a few seconds.
func (p *Proxy) Restore(t testing.TB) {
	t.Helper()
	p.ctl.Lock()
	defer p.ctl.Unlock()
	p.mu.Lock()
	p.clearFaultsLocked()
	relisten := p.ln == nil && !p.closed
	p.mu.Unlock()
	if !relisten {
		return
	}
	var ln net.Listener
	err := waitFor(nil, "proxy listening again on "+p.addr, proxyRelistenTimeout, 50*time.Millisecond, func() (err error) {
		ln, err = net.Listen("tcp", p.addr)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serveLocked(ln)
}

// setFaults changes the faults with set, under the lock, and has every
// connection look at them again.
func (p *Proxy) setFaults(set func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	set()
	for c := range p.conns {
		c.wakeLocked()
	}
}

// clearFaultsLocked removes every fault but Cut's.
func (p *Proxy) clearFaultsLocked() {
	p.hold = [2]bool{}
	p.latency = [2]time.Duration{}
	p.resetAfter = noReset
	for c := range p.conns {
		c.budget = noReset
		c.wakeLocked()
	}
}

// serveLocked makes ln the proxy's listener and accepts on it.
func (p *Proxy) serveLocked(ln net.Listener) {
	p.ln = ln
	p.wg.Add(1)
	go p.accept(ln)
}

// accept accepts connections on ln, and dials the server for each, until ln
// is closed by Cut or close.
func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		client, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // out of file descriptors, say: try again shortly
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.mu.Lock()
		if p.ln == ln {
			c := &proxyConn{p: p, client: client, done: make(chan struct{}), budget: p.resetAfter}
			p.conns[c] = struct{}{}
			p.wg.Add(1)
			go c.dial()
		} else { // cut or closed since
			client.Close()
		}
		p.mu.Unlock()
	}
}

// close stops the proxy for good, closing every connection, and waits for
// its goroutines to end; it fails t if they do not.
func (p *Proxy) close(t testing.TB) {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.cancel()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.closeLocked()
	}
	p.mu.Unlock()

	ended := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(proxyCloseTimeout):
		t.Errorf("proxy %s: goroutines still running %v after close", p.addr, proxyCloseTimeout)
	}
}
