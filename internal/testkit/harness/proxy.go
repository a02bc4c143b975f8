package harness

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
	accepted   int              // connections accepted, ever
	closed     bool
}

// NewProxy starts a proxy to upstream listening on a free 127.0.0.1 port;
// t.Cleanup closes it and every connection through it, and fails the test if
// its goroutines do not end.
func NewProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", Loopback+":0")
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

// Accepted is how many connections the proxy has accepted since it started.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
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
			p.accepted++
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
