package harness

import (
	"net"
	"testing"
	"time"
)

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
