package harness

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// Bounds of a Mute.
const (
	// muteListenTimeout bounds MuteAt's retries to listen on an address a
	// stopped server has just left.
	muteListenTimeout = 5 * time.Second
	// muteWaitPoll is how often WaitAccepted looks.
	muteWaitPoll = 10 * time.Millisecond
)

// Mute is a server that is there but does not answer: it accepts every
// connection and then neither reads nor writes nor closes it, as a member
// in a long GC pause, a member whose process is stopped (its kernel still
// completes TCP handshakes), or a member still loading its snapshot. A
// client's connect request sits in the socket's buffer; only the client's
// own deadline ends the attempt.
type Mute struct {
	addr string

	mu       sync.Mutex
	ln       net.Listener // nil once StopListening or Close
	conns    []net.Conn
	accepted int
	closed   bool
	wg       sync.WaitGroup
}

// NewMute starts a Mute on a free 127.0.0.1 port; t.Cleanup closes it and
// every connection it accepted.
func NewMute(t testing.TB) *Mute {
	t.Helper()
	return MuteAt(t, Loopback+":0")
}

// MuteAt starts a Mute on addr: the client port of a member that was just
// stopped, for a restart that accepts before it serves. Listening is retried
// for a few seconds while the old server's socket lets go of the port.
func MuteAt(t testing.TB, addr string) *Mute {
	t.Helper()
	var ln net.Listener
	err := waitFor(nil, "listen on "+addr, muteListenTimeout, muteWaitPoll, func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		t.Fatalf("mute listener: %v", err)
	}
	m := &Mute{addr: ln.Addr().String(), ln: ln}
	m.wg.Add(1)
	go m.accept(ln)
	t.Cleanup(m.Close)
	return m
}

// Addr is the listening address.
func (m *Mute) Addr() string { return m.addr }

// Accepted is how many connections the Mute has accepted.
func (m *Mute) Accepted() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.accepted
}

// WaitAccepted waits until the Mute has accepted at least n connections,
// failing t after timeout.
func (m *Mute) WaitAccepted(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	err := waitFor(nil, fmt.Sprintf("%d connections accepted by the mute listener %s", n, m.addr),
		timeout, muteWaitPoll, func() error {
			if got := m.Accepted(); got < n {
				return fmt.Errorf("%d so far", got)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

// StopListening closes the listener and keeps the accepted connections open
// and mute, so that a real server can take the address while the clients
// that reached the Mute still wait on it.
func (m *Mute) StopListening() {
	m.mu.Lock()
	ln := m.ln
	m.ln = nil
	m.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	m.wg.Wait()
}

// Close stops listening and closes every accepted connection.
func (m *Mute) Close() {
	m.StopListening()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for _, c := range m.conns {
		c.Close()
	}
	m.conns = nil
}

func (m *Mute) accept(ln net.Listener) {
	defer m.wg.Done()
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // out of file descriptors, say: try again shortly
			time.Sleep(muteWaitPoll)
			continue
		}
		m.mu.Lock()
		if m.closed {
			c.Close()
		} else {
			m.conns = append(m.conns, c)
			m.accepted++
		}
		m.mu.Unlock()
	}
}
