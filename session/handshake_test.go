package session

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

func TestHandshakeBound(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		servers int
		want    time.Duration
	}{
		{6 * time.Second, 0, 2 * time.Second}, // not resolved yet: as one
		{6 * time.Second, 1, 2 * time.Second}, // never more than t/3
		{6 * time.Second, 2, 2 * time.Second},
		{6 * time.Second, 3, 2 * time.Second},
		{6 * time.Second, 5, 1200 * time.Millisecond}, // t/n, as ZooKeeper's Java client
		{20 * time.Second, 1, 20 * time.Second / 3},
	} {
		assert.Equal(t, tc.want, handshakeBound(tc.timeout, tc.servers), "t=%v n=%d", tc.timeout, tc.servers)
	}
}

func TestHandshakeClamp(t *testing.T) {
	by := time.Now().Add(time.Second)
	h := handshake{by: by}
	assert.Equal(t, by, h.clamp(time.Time{}), "go-zookeeper's cleared deadline keeps the bound")
	assert.Equal(t, by, h.clamp(by.Add(time.Hour)), "a later deadline is cut to the bound")
	early := by.Add(-time.Millisecond)
	assert.Equal(t, early, h.clamp(early), "an earlier deadline stands")
	h.done.Store(true)
	assert.Equal(t, time.Time{}, h.clamp(time.Time{}), "after the connect response, deadlines pass through")
	assert.Equal(t, by.Add(time.Hour), h.clamp(by.Add(time.Hour)))
}

// The bound is enforced on a real socket: a listener that accepts and never
// answers fails the read at the bound, not at go-zookeeper's deadline.
func TestHandshakeDeadlineOnASilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	l := &liveness{requested: 300 * time.Millisecond}
	l.servers.Store(1)
	c, err := l.dial("tcp", ln.Addr().String(), "", time.Second, false)
	require.NoError(t, err)
	defer c.Close()
	defer func() { (<-accepted).Close() }()
	// go-zookeeper's own deadline for the connect response: an hour here.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Hour)))
	_, err = c.Read(make([]byte, 4))
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout(), "the read ends at the handshake's bound: %v", err)
}

// The host provider pauses only after every address has failed since the
// last connection: a disconnection from B in [A B] tries A, then B at once.
func TestHostProviderPausesAfterAFullRound(t *testing.T) {
	l := &liveness{}
	p := newHostProvider(l, new(nextTarget))
	require.NoError(t, p.Init([]string{"127.0.0.1:1", "127.0.0.1:2"}))
	assert.EqualValues(t, 2, l.servers.Load())
	var seq []bool
	next := func() {
		_, retry := p.Next()
		seq = append(seq, retry)
	}
	next()        // first attempt
	next()        // it failed: the other
	p.Connected() // the other connected
	next()        // disconnected: the first address again, no pause
	next()        // it failed: the connected one, no pause (go-zookeeper paused here)
	next()        // both failed: pause
	next()
	next() // a full round failed again: pause
	assert.Equal(t, []bool{false, false, false, false, true, false, true}, seq)

	one := newHostProvider(&liveness{}, nil)
	require.NoError(t, one.Init([]string{"127.0.0.1:1"}))
	_, retry := one.Next()
	assert.False(t, retry, "the first attempt")
	_, retry = one.Next()
	assert.True(t, retry, "one server that failed: pause before trying it again")
	one.Connected()
	_, retry = one.Next()
	assert.False(t, retry, "after a disconnection, at once")
}

// Each address is kept with the host it was resolved from, also when two
// entries resolve to one address: over every round of Next, the TLS dialer
// is told each target once, the address Next returns with its own host.
func TestHostProviderKeepsEachHostWithItsAddress(t *testing.T) {
	next := new(nextTarget)
	p := newHostProvider(&liveness{}, next)
	require.NoError(t, p.Init([]string{"localhost:1", "127.0.0.1:1"}))
	ips, err := net.DefaultResolver.LookupHost(context.Background(), "localhost")
	require.NoError(t, err)
	want := []target{{"127.0.0.1:1", "127.0.0.1"}}
	for _, ip := range ips {
		want = append(want, target{net.JoinHostPort(ip, "1"), "localhost"})
	}
	require.Equal(t, len(want), p.Len())
	for round := range 4 {
		var got []target
		for range p.Len() {
			addr, _ := p.Next()
			require.Equal(t, addr, next.p.Load().addr, "the dialer is told of the address Next returns")
			got = append(got, target{addr, next.hostOf(addr)})
		}
		assert.ElementsMatch(t, want, got, "round %d", round)
	}
}

// The TLS dialer verifies the address Next gave as the host Next gave it
// for: with a certificate for localhost alone and the server list
// "localhost:port,127.0.0.1:port", the localhost target succeeds and the
// 127.0.0.1 target fails for its host name, every round, whatever the
// shuffle.
func TestTLSDialerVerifiesTheHostOfNext(t *testing.T) {
	ca := harness.NewCA(t, "")
	addr := tlsServer(t, &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "server", "localhost").Pair}})
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	l := &liveness{requested: 30 * time.Second, secure: newTLSDialer(ca.ClientConfig(nil))}
	next := new(nextTarget)
	p := newHostProvider(l, next)
	require.NoError(t, p.Init([]string{net.JoinHostPort("localhost", port), addr}))
	for round := range 4 {
		var verified, refused int
		for range p.Len() {
			a, _ := p.Next()
			host := next.hostOf(a)
			c, err := l.dialTracked("tcp", a, host, time.Minute)
			switch {
			case a != addr: // localhost as ::1: nothing listens there
				require.Error(t, err)
			case host == "localhost":
				require.NoError(t, err, "round %d", round)
				c.Close()
				verified++
			default:
				var name x509.HostnameError
				require.ErrorAs(t, err, &name, "round %d", round)
				assert.Equal(t, "127.0.0.1", name.Host)
				refused++
			}
		}
		assert.Equal(t, 1, verified, "round %d: the localhost target", round)
		assert.Equal(t, 1, refused, "round %d: the 127.0.0.1 target", round)
	}
}

// tlsServer serves TLS with cfg on a free loopback port until t ends: it
// completes each handshake, then reads until the client closes. It returns
// the address.
func tlsServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(io.Discard, c) // the handshake, then whatever comes
			}()
		}
	}()
	return ln.Addr().String()
}

// Under TLS 1.3 the server refuses a client without a certificate after
// the client's handshake has returned: the alert ends the first read, in
// ZooKeeper's connect handshake. It is reported as a TLS failure, with the
// hint, and logged at Warn.
func TestTLSAlertOnTheFirstRead(t *testing.T) {
	ca := harness.NewCA(t, "")
	addr := tlsServer(t, &tls.Config{
		Certificates: []tls.Certificate{ca.Issue(t, "server", "127.0.0.1").Pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.Pool,
		MinVersion:   tls.VersionTLS13,
	})
	logs := &levels{}
	l := &liveness{requested: 30 * time.Second, secure: newTLSDialer(ca.ClientConfig(nil)), log: slog.New(logs)}
	l.servers.Store(1)
	c, err := l.dial("tcp", addr, "", time.Minute, false)
	require.NoError(t, err, "the client's TLS 1.3 handshake returns before the server judges it")
	defer c.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
	_, err = c.Read(make([]byte, 4))
	require.Error(t, err)

	fail := l.lastFail.Load()
	require.NotNil(t, fail)
	assert.Equal(t, failedTLS, fail.kind)
	assert.ErrorContains(t, fail, "certificate required")
	assert.ErrorContains(t, fail, "(no client certificate was given: the server may require one)")
	var op *net.OpError
	assert.ErrorAs(t, fail, &op, "the alert is still there for errors.As")
	assert.Equal(t, []slog.Level{slog.LevelWarn}, logs.get())
}

// Connect names the most telling failure since the last connection: a TLS
// failure before a handshake's, a handshake's before a refused dial; among
// equals, the latest. A connection forgets them.
func TestAttemptFailedKeepsTheMostTelling(t *testing.T) {
	l := &liveness{}
	fail := func(server string, kind failure) {
		l.attemptFailed(server, server, time.Now(), kind, errors.New(server))
	}
	kept := func() string { return l.lastFail.Load().server }

	fail("dial-1", failedDial)
	assert.Equal(t, "dial-1", kept())
	fail("dial-2", failedDial)
	assert.Equal(t, "dial-2", kept(), "the latest of equals")
	fail("handshake", failedHandshake)
	fail("dial-3", failedDial)
	assert.Equal(t, "handshake", kept())
	fail("tls-1", failedTLS)
	fail("handshake-2", failedHandshake)
	fail("dial-4", failedDial)
	assert.Equal(t, "tls-1", kept(), "a TLS failure outranks a refused dial (::1 beside 127.0.0.1)")
	fail("tls-2", failedTLS)
	assert.Equal(t, "tls-2", kept())

	connected(l)
	assert.Nil(t, l.lastFail.Load(), "a connection")
}

// A TLS failure is logged at Warn the first time of each cause at each
// server, and at Debug when it repeats, until a connection; the time in an
// expired certificate's error or a local port does not make a new cause.
func TestTLSFailureLogged(t *testing.T) {
	logs := &levels{}
	l := &liveness{log: slog.New(logs)}
	expired := func(now string) error {
		return fmt.Errorf("tls handshake: %w", &tls.CertificateVerificationError{
			Err: x509.CertificateInvalidError{Reason: x509.Expired, Detail: "current time " + now + " is after 2020-01-01T00:00:00Z"},
		})
	}
	reset := func(port string) error {
		return &net.OpError{Op: "read", Net: "tcp", Source: &net.TCPAddr{Port: len(port)},
			Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}
	}
	l.logTLSFailure("a", expired("2030-01-01T00:00:00Z"))
	l.logTLSFailure("a", expired("2030-01-01T00:00:01Z"))
	l.logTLSFailure("b", expired("2030-01-01T00:00:02Z")) // another server
	l.logTLSFailure("a", expired("2030-01-01T00:00:03Z"))
	l.logTLSFailure("a", reset("1"))  // another cause
	l.logTLSFailure("a", reset("22")) // the same, from another port
	connected(l)
	l.logTLSFailure("a", reset("333")) // after a connection
	W, D := slog.LevelWarn, slog.LevelDebug
	assert.Equal(t, []slog.Level{W, D, W, D, W, D, W}, logs.get())
}

// connected runs the end of a connection's handshake on l.
func connected(l *liveness) {
	c, peer := net.Pipe()
	defer peer.Close()
	defer c.Close()
	(&trackedConn{Conn: c, l: l}).handshakeDone()
}

// levels is a slog handler that keeps the level of every record.
type levels struct {
	mu   sync.Mutex
	seen []slog.Level
}

func (h *levels) Enabled(context.Context, slog.Level) bool { return true }
func (h *levels) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, r.Level)
	return nil
}
func (h *levels) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levels) WithGroup(string) slog.Handler      { return h }

func (h *levels) get() []slog.Level {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]slog.Level(nil), h.seen...)
}
