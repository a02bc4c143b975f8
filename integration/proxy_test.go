package integration

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"
)

func TestProxyZK(t *testing.T) {
	z := StartZK(t, 1)
	addrs, proxies := ProxiedServers(t, z)
	p := proxies[0]
	if len(addrs) != 1 || addrs[0] != p.Addr() || p.Upstream() != z.Servers()[0] {
		t.Fatalf("ProxiedServers = %v (upstream %s)", addrs, p.Upstream())
	}
	conn := connectZK(t, addrs, 6*time.Second)
	if _, err := conn.Create("/via-proxy", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if data, _, err := conn.Get("/via-proxy"); err != nil || string(data) != "x" {
		t.Fatalf("Get = %q, %v", data, err)
	}

	// Cut: the client loses its connection and new connections are refused.
	mark := conn.mark()
	p.Cut(t)
	conn.waitState(t, mark, zk.StateDisconnected, 5*time.Second)
	if c, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("dial through a cut proxy succeeded")
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial through a cut proxy: %v, want connection refused", err)
	}
	mark = conn.mark()
	p.Restore(t)
	conn.waitState(t, mark, zk.StateHasSession, 10*time.Second)
	if _, _, err := conn.Get("/via-proxy"); err != nil {
		t.Fatalf("Get after Restore: %v", err)
	}

	// Blackhole: the open connection stays, but nothing passes; the client
	// times out (2/3 of its session timeout) and disconnects.
	mark = conn.mark()
	p.Blackhole(t)
	start := time.Now()
	conn.waitState(t, mark, zk.StateDisconnected, 10*time.Second)
	t.Logf("client disconnected %v after Blackhole", time.Since(start).Round(time.Millisecond))
	mark = conn.mark()
	p.Restore(t)
	conn.waitState(t, mark, zk.StateHasSession, 15*time.Second)
	if data, _, err := conn.Get("/via-proxy"); err != nil || string(data) != "x" {
		t.Fatalf("Get after Blackhole and Restore = %q, %v", data, err)
	}
}

func TestProxyBlackholeHolds(t *testing.T) {
	z := StartZK(t, 1)
	p := NewProxy(t, z.Servers()[0])
	p.Blackhole(t)
	c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err != nil {
		t.Fatalf("dial a blackholed proxy: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ruok")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if n, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through a blackhole: %q, %v; want a timeout", buf[:n], err)
	}
	// Restore delivers the held request, and the reply comes back on the
	// same connection.
	p.Restore(t)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(buf)
	if string(buf[:n]) != "imok" {
		t.Fatalf("reply after Restore: %q, %v", buf[:n], err)
	}
}

func TestProxyLatencyAndReset(t *testing.T) {
	z := StartZK(t, 1)
	p := NewProxy(t, z.Servers()[0])
	p.Latency(t, 150*time.Millisecond)
	start := time.Now()
	if r, err := FourLetterWord(p.Addr(), "ruok"); err != nil || r != "imok" {
		t.Fatalf("ruok through latency: %q, %v", r, err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("round trip with 150ms latency each way took %v", d)
	}
	p.Restore(t)
	start = time.Now()
	if _, err := FourLetterWord(p.Addr(), "ruok"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Fatalf("round trip after Restore took %v", d)
	}

	// ResetAfter(2): "ru" reaches the server, then the connection closes.
	p.ResetAfter(t, 2)
	if r, err := FourLetterWord(p.Addr(), "ruok"); r == "imok" {
		t.Fatalf("ruok answered through ResetAfter(2): %v", err)
	}
	p.Restore(t)
	if r, err := FourLetterWord(p.Addr(), "ruok"); err != nil || r != "imok" {
		t.Fatalf("ruok after Restore: %q, %v", r, err)
	}
}

// A one-way partition toward the client: the server applies a request whose
// reply never comes; the client gives up on the connection, and finds its
// session again after Restore.
func TestProxyHoldToClientZK(t *testing.T) {
	z := StartZK(t, 1)
	p := NewProxy(t, z.Servers()[0])
	observer := connectZK(t, z.Servers(), 6*time.Second)
	conn := connectZK(t, []string{p.Addr()}, 6*time.Second)

	mark := conn.mark()
	p.HoldToClient(t)
	created := make(chan error, 1)
	go func() {
		_, err := conn.Create("/one-way", nil, 0, zk.WorldACL(zk.PermAll))
		created <- err
	}()
	err := waitFor(nil, "/one-way created", 5*time.Second, 20*time.Millisecond, func() error {
		ok, _, err := observer.Exists("/one-way")
		if err == nil && !ok {
			err = errors.New("not there")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	conn.waitState(t, mark, zk.StateDisconnected, 10*time.Second)
	select {
	case err := <-created:
		if err == nil {
			t.Fatal("Create through a partition toward the client got its reply")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Create did not return after the client disconnected")
	}

	mark = conn.mark()
	p.Restore(t)
	conn.waitState(t, mark, zk.StateHasSession, 15*time.Second)
	if _, _, err := conn.Get("/one-way"); err != nil {
		t.Fatalf("Get after Restore: %v", err)
	}
}

// listenUpstream listens on 127.0.0.1 for a proxy to dial. Tests accept by
// hand (proxiedPair), so no goroutine serves it.
func listenUpstream(t *testing.T) *net.TCPListener {
	t.Helper()
	ln, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.(*net.TCPListener)
}

// proxiedPair dials p and accepts on ln the connection p dials for it: the
// client's end and the server's end of one proxied connection, closed at the
// test's end.
func proxiedPair(t *testing.T, p *Proxy, ln *net.TCPListener) (client, server *net.TCPConn) {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err != nil {
		t.Fatalf("dial the proxy: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	ln.SetDeadline(time.Now().Add(5 * time.Second))
	s, err := ln.Accept()
	if err != nil {
		t.Fatalf("the proxy's dial to the server: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// send writes s to conn.
func send(t *testing.T, conn net.Conn, s string) {
	t.Helper()
	conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(s)); err != nil {
		t.Fatalf("write %q: %v", s, err)
	}
}

// expectRead reads len(want) bytes from conn within 5s and wants them to be
// want.
func expectRead(t *testing.T, conn net.Conn, want string) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(want))
	n, err := io.ReadFull(conn, got)
	if string(got[:n]) != want {
		t.Fatalf("read %q, %v; want %q", got[:n], err, want)
	}
}

// expectEOF wants conn's peer to have closed its side: a read returns no
// byte and io.EOF within 5s.
func expectEOF(t *testing.T, conn net.Conn) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	if n, err := conn.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("read %q, %v; want EOF", buf[:n], err)
	}
}

// expectClosed wants conn to be closed by its peer, by a close or a reset: a
// read returns no byte and an error other than a timeout within 5s.
func expectClosed(t *testing.T, conn net.Conn) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, err := conn.Read(buf)
	if n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %q, %v; want the connection closed", buf[:n], err)
	}
}

// expectNothing wants nothing, neither a byte nor the end of the stream, to
// arrive on conn for 300ms.
func expectNothing(t *testing.T, conn net.Conn) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 64)
	if n, err := conn.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %q, %v; want nothing", buf[:n], err)
	}
}

// expectNothingYet wants no byte to be waiting on conn now.
func expectNothingYet(t *testing.T, conn net.Conn) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	buf := make([]byte, 64)
	if n, err := conn.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %q, %v; want nothing yet", buf[:n], err)
	}
}

// pattern is n bytes that change from one offset to the next.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// sendBig writes data to conn in a goroutine, which ends when the write
// does; wait returns its error, bounded by timeout.
func sendBig(conn net.Conn, data []byte) (wait func(timeout time.Duration) error) {
	done := make(chan error, 1)
	go func() {
		_, err := conn.Write(data)
		done <- err
	}()
	return func(timeout time.Duration) error {
		select {
		case err := <-done:
			return err
		case <-time.After(timeout):
			return errors.New("write still blocked")
		}
	}
}

// expectBig reads len(want) bytes from conn within timeout and wants them to
// be want.
func expectBig(t *testing.T, conn net.Conn, want []byte, timeout time.Duration) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(timeout))
	got := make([]byte, len(want))
	n, err := io.ReadFull(conn, got)
	if err != nil || !bytes.Equal(got, want) {
		i := 0
		for i < n && got[i] == want[i] {
			i++
		}
		t.Fatalf("read %d of %d bytes, %v; first difference at %d", n, len(want), err, i)
	}
}

func TestProxyForwards(t *testing.T) {
	ln := listenUpstream(t)
	p := NewProxy(t, ln.Addr().String())
	c, s := proxiedPair(t, p, ln)
	send(t, c, "hello")
	expectRead(t, s, "hello")
	send(t, s, "world")
	expectRead(t, c, "world")

	// Much, both ways at once, in order.
	up, down := pattern(3<<20), pattern(2<<20)
	waitUp, waitDown := sendBig(c, up), sendBig(s, down)
	expectBig(t, s, up, 10*time.Second)
	expectBig(t, c, down, 10*time.Second)
	if err := waitUp(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := waitDown(5 * time.Second); err != nil {
		t.Fatal(err)
	}

	// A half close is forwarded as one: the other way still works.
	c.CloseWrite()
	expectEOF(t, s)
	send(t, s, "bye")
	expectRead(t, c, "bye")
	s.CloseWrite()
	expectEOF(t, c)
}

func TestProxyUpstreamDown(t *testing.T) {
	ln := listenUpstream(t)
	addr := ln.Addr().String()
	ln.Close()
	p := NewProxy(t, addr)
	c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err != nil {
		t.Fatalf("dial the proxy: %v", err)
	}
	defer c.Close()
	expectClosed(t, c) // accepted, then closed when the server refused
}

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

// Latency delays every chunk from the time it was read, as a pipeline: many
// small writes cost the latency about once, not once each.
func TestProxyLatencyPipelines(t *testing.T) {
	ln := listenUpstream(t)
	p := NewProxy(t, ln.Addr().String())
	c, s := proxiedPair(t, p, ln)
	const d, n = 200 * time.Millisecond, 20
	p.Latency(t, d)

	start := time.Now()
	wrote := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := c.Write([]byte{byte(i)}); err != nil {
				wrote <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		wrote <- nil
	}()
	s.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, n)
	if _, err := io.ReadFull(s, got[:1]); err != nil {
		t.Fatal(err)
	}
	if e := time.Since(start); e < d {
		t.Fatalf("first byte after %v with latency %v", e, d)
	}
	if _, err := io.ReadFull(s, got[1:]); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	for i, b := range got {
		if int(b) != i {
			t.Fatalf("bytes out of order: %v", got)
		}
	}
	// One chunk per d would take n*d = 4s; a pipeline about d + n*5ms.
	if elapsed >= n*d/2 {
		t.Fatalf("%d writes 5ms apart took %v through latency %v: not pipelined", n, elapsed, d)
	}
	t.Logf("%d writes 5ms apart through latency %v: %v", n, d, elapsed.Round(time.Millisecond))

	// The way back is delayed too, and Restore lets what is delayed go at once.
	p.Latency(t, time.Hour)
	send(t, s, "late")
	send(t, c, "later")
	expectNothing(t, c)
	expectNothing(t, s)
	p.Restore(t)
	expectRead(t, c, "late")
	expectRead(t, s, "later")
}

// LatencyToClient and LatencyToServer delay one way only: what goes the other
// way overtakes what is delayed.
func TestProxyLatencyOneWay(t *testing.T) {
	ln := listenUpstream(t)
	p := NewProxy(t, ln.Addr().String())
	c, s := proxiedPair(t, p, ln)
	const d = time.Second

	p.LatencyToClient(t, d)
	start := time.Now()
	send(t, s, "A")
	send(t, c, "B")
	expectRead(t, s, "B")
	expectNothingYet(t, c)
	expectRead(t, c, "A")
	if e := time.Since(start); e < d {
		t.Fatalf("A after %v with latency %v toward the client", e, d)
	}

	p.Restore(t)
	p.LatencyToServer(t, d)
	start = time.Now()
	send(t, c, "C")
	send(t, s, "D")
	expectRead(t, c, "D")
	expectNothingYet(t, s)
	expectRead(t, s, "C")
	if e := time.Since(start); e < d {
		t.Fatalf("C after %v with latency %v toward the server", e, d)
	}
}

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
