package harness

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// listenUpstream listens on 127.0.0.1 for a proxy to dial. Tests accept by
// hand (proxiedPair), so no goroutine serves it.
func listenUpstream(t *testing.T) *net.TCPListener {
	t.Helper()
	ln, err := net.Listen("tcp", Loopback+":0")
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
