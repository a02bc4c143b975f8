package harness

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestProxyResetAfter(t *testing.T) {
	ln := listenUpstream(t)
	p := NewProxy(t, ln.Addr().String())
	c, s := proxiedPair(t, p, ln)
	c0, s0 := proxiedPair(t, p, ln)
	send(t, c, "before")
	expectRead(t, s, "before")

	// Counted from the call on open connections: exactly 10 more bytes,
	// across chunks, then the close.
	p.ResetAfter(t, 10)
	send(t, c, "abcd")
	expectRead(t, s, "abcd")
	send(t, c, "efghijklmnop")
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(s); string(got) != "efghij" || err != nil {
		t.Fatalf("the server got %q, %v; want \"efghij\" then EOF", got, err)
	}
	s.Write([]byte("reply")) // lost: the client's side is closed
	expectClosed(t, c)

	// From their start on new connections.
	c2, s2 := proxiedPair(t, p, ln)
	send(t, c2, "0123456789tail")
	s2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(s2); string(got) != "0123456789" || err != nil {
		t.Fatalf("the server got %q, %v; want \"0123456789\" then EOF", got, err)
	}
	expectClosed(t, c2)

	// ResetAfter(0) closes open connections at once.
	p.ResetAfter(t, 0)
	expectEOF(t, s0)
	expectClosed(t, c0)

	p.Restore(t)
	c3, s3 := proxiedPair(t, p, ln)
	send(t, c3, "0123456789 and on")
	expectRead(t, s3, "0123456789 and on")
}

func TestProxyCutAndRestore(t *testing.T) {
	ln := listenUpstream(t)
	p := NewProxy(t, ln.Addr().String())
	addr := p.Addr()
	c, s := proxiedPair(t, p, ln)
	p.Blackhole(t)
	send(t, c, "dropped")
	p.Cut(t)
	expectClosed(t, s) // without the held bytes
	expectClosed(t, c)
	for range 2 {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			t.Fatal("dial through a cut proxy succeeded")
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial through a cut proxy: %v, want connection refused", err)
		}
	}

	p.Restore(t)
	if p.Addr() != addr {
		t.Fatalf("address %s after Restore, was %s", p.Addr(), addr)
	}
	c2, s2 := proxiedPair(t, p, ln) // dials addr; and the blackhole is gone
	send(t, c2, "ping")
	expectRead(t, s2, "ping")
	send(t, s2, "pong")
	expectRead(t, c2, "pong")
	p.Restore(t) // twice is fine
}

// Every goroutine of a proxy ends when the test's cleanup closes it, whatever
// its connections were doing.
func TestProxyLeavesNoGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Run("busy proxy", func(t *testing.T) {
		ln := listenUpstream(t)
		p := NewProxy(t, ln.Addr().String())

		// Reset, with the server keeping its side open: the proxy drains it.
		p.ResetAfter(t, 2)
		c1, s1 := proxiedPair(t, p, ln)
		send(t, c1, "abc")
		expectRead(t, s1, "ab")
		p.Restore(t)

		// Cut and listening again: a second accept loop.
		p.Cut(t)
		p.Restore(t)

		// Held one way with a full queue, delayed the other way.
		c2, s2 := proxiedPair(t, p, ln)
		p.HoldToServer(t)
		wait := sendBig(c2, pattern(32<<20)) // ends when c2 is closed
		if err := wait(500 * time.Millisecond); err == nil {
			t.Fatal("32 MiB written into a held direction")
		}
		p.LatencyToClient(t, time.Hour)
		send(t, s2, "delayed")

		// Half closed.
		c3, s3 := proxiedPair(t, p, ln)
		_ = s3
		c3.CloseWrite()
	})
	goleak.VerifyNone(t, before)
}
