package session

import (
	"net"
	"strings"
	"sync/atomic"
	"time"
)

// The client keeps its own account of how recently the server answered,
// because go-zookeeper may report a silent connection later than two thirds
// of the session timeout (its send loop can sit in a blocked write until its
// own deadline), and the server expires the session one session timeout
// after it last heard from us. Every byte read from the server counts.

// liveness is shared by a client's connections.
type liveness struct {
	lastRead   atomic.Int64 // unix nanos of the last byte read from the server
	negotiated atomic.Int64 // the session timeout the server granted, 0 until known
	conn       atomic.Pointer[trackedConn]
	tap        zxidTap // creates' zxids, read off the replies
}

// trackedConn records reads on the connection go-zookeeper uses, and lets
// the zxid tap look at both streams. go-zookeeper reads it from one
// goroutine and writes it from one other.
type trackedConn struct {
	net.Conn
	l       *liveness
	in, out frames
}

func (t *trackedConn) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	if n > 0 {
		t.l.lastRead.Store(time.Now().UnixNano())
		t.in.feed(p[:n])
	}
	return n, err
}

// Write lets the tap see a request before it can be answered.
func (t *trackedConn) Write(p []byte) (int, error) {
	t.out.feed(p)
	return t.Conn.Write(p)
}

// dialer is go-zookeeper's Dialer, tracking the connection it makes.
func (l *liveness) dialer(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	t := &trackedConn{Conn: c, l: l}
	tapFrames(t, &l.tap)
	l.lastRead.Store(time.Now().UnixNano())
	l.conn.Store(t)
	return t, nil
}

// sinceRead is how long the server has been silent.
func (l *liveness) sinceRead(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, l.lastRead.Load()))
}

// timeout is the negotiated session timeout, or requested until known.
func (l *liveness) timeout(requested time.Duration) time.Duration {
	if n := l.negotiated.Load(); n > 0 {
		return time.Duration(n)
	}
	return requested
}

// noteLog picks the negotiated session timeout out of go-zookeeper's
// "authenticated: id=%d, timeout=%d" message (the only place it reports it).
func (l *liveness) noteLog(format string, args []any) {
	if strings.HasPrefix(format, "authenticated: id=") && len(args) == 2 {
		if ms, ok := args[1].(int32); ok && ms > 0 {
			l.negotiated.Store(int64(time.Duration(ms) * time.Millisecond))
		}
	}
}

// Watchdog and trust window, as fractions of the session timeout t:
//   - silentAfter: no byte from the server for 2/3 t (go-zookeeper's own
//     receive timeout) means the connection is dead: the client reports
//     Suspended and drops the connection, whatever go-zookeeper says;
//   - trustUntil: under OnlyLostIsLost, the session value ends 3/4 t after
//     the last byte read, a quarter of t before the server may expire it.
func silentAfter(t time.Duration) time.Duration { return t * 2 / 3 }
func trustUntil(t time.Duration) time.Duration  { return t * 3 / 4 }

// watch runs the watchdog until the client is closed.
func (c *Client) watch() {
	defer c.wg.Done()
	for {
		t := c.live.timeout(c.cfg.sessionTimeout)
		select {
		case <-c.done:
			return
		case <-time.After(t / 10):
		}
		c.mu.Lock()
		silent := c.m.state.connected() && c.live.sinceRead(time.Now()) > silentAfter(t)
		if silent {
			c.log.Warn("zookeeper server silent past the receive timeout; dropping the connection",
				"silent", c.live.sinceRead(time.Now()).Round(time.Millisecond))
			c.applyLocked(inDisconnected, 0)
		}
		c.mu.Unlock()
		if tc := c.live.conn.Load(); silent && tc != nil {
			_ = tc.Conn.Close() // go-zookeeper reconnects
		}
	}
}
