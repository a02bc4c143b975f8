package harness

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
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
