package integration

import (
	"bytes"
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

// flow is one direction of a proxyConn: the bytes read from src and not yet
// written to dst.
type flow struct {
	dir      direction
	src, dst net.Conn
	wake     chan struct{} // capacity 1: the writer should look again
	room     chan struct{} // capacity 1: the reader may queue again

	// Guarded by p.mu.
	queue    []chunk
	queued   int       // bytes in queue
	end      error     // how src ended, io.EOF for a close; nil while open
	endAt    time.Time // when src ended
	finished bool      // dst was told the end, or cannot be written any more
}

// chunk is what one read of a flow's src returned.
type chunk struct {
	data []byte
	at   time.Time // when it was read
}

// step is what a flow's writer does next.
type step int

const (
	stepWait  step = iota // until woken, or until the time given
	stepWrite             // write the bytes given
	stepEnd               // tell dst the end of the stream
	stepReset             // reset the connection after the bytes given
	stepExit              // stop: the connection is closed or resetting
)

// signal wakes whoever waits on ch, a channel of capacity 1, without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
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

func newFlow(dir direction, src, dst net.Conn) *flow {
	return &flow{dir: dir, src: src, dst: dst, wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
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

// read reads f.src until it ends or c is closed.
func (c *proxyConn) read(f *flow) {
	defer c.p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := f.src.Read(buf)
		if !c.queue(f, buf[:n], err) {
			return
		}
	}
}

// queue takes what one read of f.src returned: it queues the bytes and the
// end of the stream for the writer, or drops them when they can no longer be
// delivered, and waits while the queue is full. It reports whether to read
// on.
func (c *proxyConn) queue(f *flow, data []byte, err error) bool {
	now := time.Now()
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	switch c.state {
	case connClosed:
		return false
	case connResetting:
		// Only the server's side is still read, so that the server closes
		// first (see reset); what it says is lost.
		if f.dir == toClient && err != nil {
			c.closeLocked()
		}
		return f.dir == toClient && err == nil
	}
	if len(data) > 0 && !f.finished {
		f.queue = append(f.queue, chunk{data: bytes.Clone(data), at: now})
		f.queued += len(data)
	}
	if err != nil {
		f.end, f.endAt = err, now
	}
	signal(f.wake)
	for err == nil && f.queued >= proxyMaxQueued && c.state == connOpen {
		p.mu.Unlock()
		select {
		case <-f.room:
		case <-c.done:
		}
		p.mu.Lock()
	}
	return err == nil
}

// write delivers f's queue to f.dst until the end of the stream, or until c
// is closed or reset.
func (c *proxyConn) write(f *flow) {
	defer c.p.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s, data, due := c.next(f, time.Now())
		switch s {
		case stepWait:
			var fire <-chan time.Time
			if !due.IsZero() {
				timer.Reset(time.Until(due))
				fire = timer.C
			}
			select {
			case <-f.wake:
			case <-fire:
			case <-c.done:
			}
		case stepWrite:
			if _, err := f.dst.Write(data); err != nil {
				c.lost(f)
				return
			}
		case stepEnd:
			c.deliverEnd(f)
			return
		case stepReset:
			c.reset(data)
			return
		case stepExit:
			return
		}
	}
}

// next decides, at now, what f's writer does next. To write, it takes the
// bytes off the queue, and counts them against c's budget; when they reach
// it, c starts resetting.
func (c *proxyConn) next(f *flow, now time.Time) (step, []byte, time.Time) {
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.state != connOpen {
		return stepExit, nil, time.Time{}
	}
	budgeted := f.dir == toServer && c.budget != noReset
	if budgeted && c.budget == 0 {
		c.startResetLocked()
		return stepReset, nil, time.Time{}
	}
	if p.hold[f.dir] {
		return stepWait, nil, time.Time{}
	}
	var at time.Time
	switch {
	case len(f.queue) > 0:
		at = f.queue[0].at
	case f.end != nil:
		at = f.endAt
	default:
		return stepWait, nil, time.Time{}
	}
	if due := at.Add(p.latency[f.dir]); now.Before(due) {
		return stepWait, nil, due
	}
	if len(f.queue) == 0 {
		return stepEnd, nil, time.Time{}
	}
	data := f.queue[0].data
	f.queue[0] = chunk{}
	f.queue = f.queue[1:]
	f.queued -= len(data)
	signal(f.room)
	if budgeted {
		if int64(len(data)) >= c.budget {
			data = data[:c.budget]
			c.budget = 0
			c.startResetLocked()
			return stepReset, data, time.Time{}
		}
		c.budget -= int64(len(data))
	}
	return stepWrite, data, time.Time{}
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
