package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// toxiServer is the in-process toxiproxy every Proxy belongs to; it serves no
// HTTP API and logs nothing.
var toxiServer = sync.OnceValue(func() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
})

// proxySeq numbers proxies, for unique toxiproxy names.
var proxySeq atomic.Int64

// Names of the toxics a Proxy adds.
const (
	toxicHoldUp     = "zkr_hold_up"
	toxicHoldDown   = "zkr_hold_down"
	toxicLatencyUp  = "zkr_latency_up"
	toxicLatencyDn  = "zkr_latency_down"
	toxicResetAfter = "zkr_reset_after"
)

// Proxy is a TCP fault proxy in front of one server (toxiproxy, in process).
// Clients connect to Addr instead of the server; the test then cuts,
// partitions or slows the traffic.
type Proxy struct {
	mu       sync.Mutex
	tp       *toxiproxy.Proxy
	addr     string
	upstream string
	cut      bool
	closed   bool
}

// NewProxy starts a proxy to upstream listening on a free 127.0.0.1 port;
// t.Cleanup closes it and every connection through it.
func NewProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	name := fmt.Sprintf("zkr-proxy-%d", proxySeq.Add(1))
	tp := toxiproxy.NewProxy(toxiServer(), name, loopback+":0", upstream)
	if err := tp.Start(); err != nil {
		t.Fatalf("proxy to %s: %v", upstream, err)
	}
	p := &Proxy{tp: tp, addr: tp.Listen, upstream: upstream}
	t.Cleanup(p.close)
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

// Cut closes every connection through the proxy (bytes held by Blackhole are
// dropped) and stops listening, so new connections are refused, until
// Restore. Toxics are removed.
func (p *Proxy) Cut(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.discardHeld()
	p.tp.Toxics.ResetToxics(context.Background())
	p.tp.Stop()
	p.cut = true
}

// Blackhole partitions the proxy: connections stay open, and new ones are
// accepted, but no byte passes in either direction, nor does either side's
// close reach the other, until Restore. What is sent meanwhile is held (as
// TCP would keep retransmitting it) and delivered in order by Restore.
func (p *Proxy) Blackhole(t testing.TB) {
	t.Helper()
	p.addToxic(t, toxicHoldUp, holdToxicType, "upstream", nil)
	p.addToxic(t, toxicHoldDown, holdToxicType, "downstream", nil)
}

// Latency delays the traffic in each direction by d (millisecond resolution),
// so a round trip takes 2d longer. Calling it again replaces d.
func (p *Proxy) Latency(t testing.TB, d time.Duration) {
	t.Helper()
	attrs := map[string]any{"latency": d.Milliseconds(), "jitter": 0}
	p.removeToxic(toxicLatencyUp)
	p.removeToxic(toxicLatencyDn)
	p.addToxic(t, toxicLatencyUp, "latency", "upstream", attrs)
	p.addToxic(t, toxicLatencyDn, "latency", "downstream", attrs)
}

// ResetAfter closes each connection through the proxy once it has carried n
// more bytes toward the server (counted from this call for open connections,
// from their start for new ones), until Restore. It cuts a connection in the
// middle of a request, or right after one; the server may still answer a
// request it received before the close reaches it.
func (p *Proxy) ResetAfter(t testing.TB, n int64) {
	t.Helper()
	p.removeToxic(toxicResetAfter)
	p.addToxic(t, toxicResetAfter, "limit_data", "upstream", map[string]any{"bytes": n})
}

// Restore removes every toxic (delivering what Blackhole held) and, after
// Cut, listens again on the same address.
func (p *Proxy) Restore(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tp.Toxics.ResetToxics(context.Background())
	if !p.cut || p.closed {
		return
	}
	err := waitFor(nil, "proxy listening again on "+p.addr, 5*time.Second, 50*time.Millisecond, func() error {
		err := p.tp.Start()
		if errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
			return nil
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	p.cut = false
}

// close stops the proxy for good, closing every connection.
func (p *Proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.discardHeld()
	p.tp.Toxics.ResetToxics(context.Background())
	p.tp.Stop()
}

// discardHeld makes the removal of Blackhole toxics drop what they hold.
func (p *Proxy) discardHeld() {
	for _, name := range []string{toxicHoldUp, toxicHoldDown} {
		if w := p.tp.Toxics.GetToxic(name); w != nil {
			w.Toxic.(*holdToxic).discard.Store(true)
		}
	}
}

// addToxic adds a toxic through toxiproxy's JSON form (its only way in
// without HTTP). A toxic of that name already there is left as it is.
func (p *Proxy) addToxic(t testing.TB, name, typ, dir string, attrs map[string]any) {
	t.Helper()
	if attrs == nil {
		attrs = map[string]any{}
	}
	body, err := json.Marshal(map[string]any{
		"name": name, "type": typ, "stream": dir, "toxicity": 1.0, "attributes": attrs,
	})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tp.Toxics.GetToxic(name) != nil {
		return
	}
	if _, err := p.tp.Toxics.AddToxicJson(strings.NewReader(string(body))); err != nil {
		t.Fatalf("proxy %s: add %s toxic: %v", p.addr, typ, err)
	}
}

// removeToxic removes the named toxic if present.
func (p *Proxy) removeToxic(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tp.Toxics.GetToxic(name) != nil {
		_ = p.tp.Toxics.RemoveToxic(context.Background(), name)
	}
}
