package harness

import (
	"testing"
	"time"
)

func TestProxyHoldToServer(t *testing.T) {
	ln := listenUpstream(t)
	p := NewProxy(t, ln.Addr().String())
	c, s := proxiedPair(t, p, ln)
	p.HoldToServer(t)

	send(t, c, "held")
	expectNothing(t, s)
	send(t, s, "flows") // the other way is open
	expectRead(t, c, "flows")

	// New connections are accepted and dialed, and held too.
	c2, s2 := proxiedPair(t, p, ln)
	send(t, c2, "new")
	expectNothing(t, s2)

	// The client's close is held like its bytes.
	send(t, c, " and more")
	c.CloseWrite()
	expectNothing(t, s)
	send(t, s, " still")
	expectRead(t, c, " still")

	p.Restore(t)
	expectRead(t, s, "held and more")
	expectEOF(t, s)
	expectRead(t, s2, "new")
	send(t, s2, "answer")
	expectRead(t, c2, "answer")
}

func TestProxyHoldToClient(t *testing.T) {
	ln := listenUpstream(t)
	p := NewProxy(t, ln.Addr().String())
	c, s := proxiedPair(t, p, ln)
	p.HoldToClient(t)

	send(t, s, "held")
	expectNothing(t, c)
	send(t, c, "flows") // the other way is open
	expectRead(t, s, "flows")

	// The server's close is held like its bytes.
	send(t, s, " and more")
	s.CloseWrite()
	expectNothing(t, c)
	send(t, c, " still")
	expectRead(t, s, " still")

	p.Restore(t)
	expectRead(t, c, "held and more")
	expectEOF(t, c)
}

// A client gone during a blackhole stays unknown to the server until Restore,
// and a full queue pushes back on the sender instead of growing.
func TestProxyBlackhole(t *testing.T) {
	ln := listenUpstream(t)
	p := NewProxy(t, ln.Addr().String())
	c, s := proxiedPair(t, p, ln)
	p.Blackhole(t)
	send(t, c, "last words")
	c.Close()
	expectNothing(t, s)

	c2, s2 := proxiedPair(t, p, ln)
	big := pattern(32 << 20) // more than the proxy and both sockets hold
	wait := sendBig(c2, big)
	if err := wait(500 * time.Millisecond); err == nil {
		t.Fatal("32 MiB written into a blackhole: the proxy does not push back")
	}
	send(t, s2, "to the client")
	expectNothing(t, c2)

	p.Restore(t)
	expectRead(t, s, "last words")
	expectEOF(t, s)
	expectBig(t, s2, big, 20*time.Second)
	if err := wait(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	expectRead(t, c2, "to the client")
}
