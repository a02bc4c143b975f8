package session

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	c, err := l.dial("tcp", ln.Addr().String(), time.Second, false)
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
	p := newHostProvider(l)
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

	one := newHostProvider(&liveness{})
	require.NoError(t, one.Init([]string{"127.0.0.1:1"}))
	_, retry := one.Next()
	assert.False(t, retry, "the first attempt")
	_, retry = one.Next()
	assert.True(t, retry, "one server that failed: pause before trying it again")
	one.Connected()
	_, retry = one.Next()
	assert.False(t, retry, "after a disconnection, at once")
}
