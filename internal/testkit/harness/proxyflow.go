package harness

import (
	"bytes"
	"net"
	"time"
)

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

func newFlow(dir direction, src, dst net.Conn) *flow {
	return &flow{dir: dir, src: src, dst: dst, wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
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
