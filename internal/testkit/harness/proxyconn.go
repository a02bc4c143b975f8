package harness

import (
	"context"
	"errors"
	"io"
	"net"
	"time"
)

// direction is one way through a proxied connection, named from the client's
// side.
type direction int

const (
	toServer direction = iota // what the client writes
	toClient                  // what the server writes
)

// connState is where a proxyConn is in its life.
type connState int

const (
	connOpen      connState = iota
	connResetting           // ResetAfter fired: the server's side is drained
	connClosed              // both connections are closed
)

// proxyConn is one client connection through a Proxy and the proxy's own
// connection to the server for it. Four goroutines move its bytes: per
// direction a reader, which reads as soon as the sender writes and queues
// what it read with the time it read it, and a writer, which delivers the
// queue in order once the direction is not held and the head's latency has
// passed. Latency thus delays every chunk from the time it was read, without
// holding back the chunks read after it.
type proxyConn struct {
	p      *Proxy
	client net.Conn
	server net.Conn      // nil until dialed
	flows  [2]*flow      // by direction; nil until dialed
	done   chan struct{} // closed when the state leaves connOpen

	// Guarded by p.mu.
	state  connState
	budget int64 // bytes toward the server until the reset, or noReset
}

// closeWrite half-closes conn: the peer reads the end of the stream after
// what was written, and conn can still be read.
func closeWrite(conn net.Conn) error {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return conn.Close()
}

// dial connects c to the server and starts moving its bytes; it closes c
// when the server cannot be reached.
func (c *proxyConn) dial() {
	p := c.p
	defer p.wg.Done()
	ctx, cancel := context.WithTimeout(p.ctx, proxyDialTimeout)
	server, err := new(net.Dialer).DialContext(ctx, "tcp", p.upstream)
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil || c.state != connOpen {
		if server != nil {
			server.Close()
		}
		c.closeLocked()
		return
	}
	c.server = server
	c.flows[toServer] = newFlow(toServer, c.client, server)
	c.flows[toClient] = newFlow(toClient, server, c.client)
	p.wg.Add(4)
	for _, f := range c.flows {
		go c.read(f)
		go c.write(f)
	}
}

// wakeLocked has c's writers look at the faults again.
func (c *proxyConn) wakeLocked() {
	for _, f := range c.flows {
		if f != nil {
			signal(f.wake)
		}
	}
}

// closeLocked closes both connections of c, dropping what it holds; its
// goroutines end.
func (c *proxyConn) closeLocked() {
	if c.state == connClosed {
		return
	}
	if c.state == connOpen {
		close(c.done)
	}
	c.state = connClosed
	c.client.Close()
	if c.server != nil {
		c.server.Close()
	}
	delete(c.p.conns, c)
}

// startResetLocked stops c from forwarding anything more, before the writer
// toward the server delivers its last bytes and resets c.
func (c *proxyConn) startResetLocked() {
	c.state = connResetting
	close(c.done)
}

// reset ends c for ResetAfter, once nothing is forwarded any more: it writes
// the last bytes the server is to get, then half-closes the connection to the
// server (the server reads the end of the stream after those bytes; a full
// close could send a TCP reset, which may discard them) and closes the
// client's. The server's side is read, and dropped, until the server closes
// it or proxyResetDrain passes; then c is closed.
func (c *proxyConn) reset(last []byte) {
	if len(last) > 0 {
		c.server.Write(last) // an error means the server is gone anyway
	}
	closeWrite(c.server)
	c.server.SetReadDeadline(time.Now().Add(proxyResetDrain))
	c.client.Close()
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.flows[toClient].end != nil { // its reader is gone: nothing to drain
		c.closeLocked()
	}
}

// deliverEnd tells f.dst the end of f.src's stream: a half close after a
// close, and closing c after anything else (a reset, a read error). c closes
// once both ends were delivered.
func (c *proxyConn) deliverEnd(f *flow) {
	p := c.p
	p.mu.Lock()
	end := f.end
	p.mu.Unlock()
	if errors.Is(end, io.EOF) {
		closeWrite(f.dst) // an error is taken as the end all the same
		p.mu.Lock()
		defer p.mu.Unlock()
		f.finished = true
		if c.state == connOpen && c.flows[toServer].finished && c.flows[toClient].finished {
			c.closeLocked()
		}
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.state == connOpen {
		c.closeLocked()
	}
}

// lost records that f.dst can no longer be written (its side closed or reset
// the connection): f drops what it holds and what it reads from now on, and
// c closes if the other direction is finished too. Otherwise the other
// direction's reader sees that side's end, which then travels like any
// other; so a client gone while the direction toward the server is held
// stays unknown to the server until Restore.
func (c *proxyConn) lost(f *flow) {
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.state != connOpen {
		return
	}
	f.finished = true
	f.queue, f.queued = nil, 0
	signal(f.room)
	if c.flows[toServer].finished && c.flows[toClient].finished {
		c.closeLocked()
	}
}
