package session

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// go-zookeeper delivers a watch's event on a channel of its own type, and
// the session's API owns its types: carried over by a goroutine, each
// event woke two goroutines, the carrier and then the waiter, on every
// handoff of a lock. The watch table delivers it from the connection's
// event callback instead, which go-zookeeper calls from its receive loop,
// in the server's order, just before it serves its own channels: the
// waiter is the only goroutine woken.
//
// A watch is armed in the table after its read's reply, on the reading
// goroutine, while go-zookeeper's receive loop goes on: an event that the
// loop handled between the reply and the arming would be missed, and one
// it handled before the reply is older than the read and must not fire
// the watch. The table cannot tell the two apart, so it notes every event
// of a path while a read of it is in flight (pending): a watch whose read
// saw none is armed, and the next event of its path and kind is its own;
// one whose read saw one takes go-zookeeper's channel, which go-zookeeper
// armed at the reply itself, and a carrier goroutine (watchOf). Only a
// path that changes while it is read pays that hop.
//
// go-zookeeper ends every watch of a connection with EventNotWatching when
// the session expires or the connection is closed, through the callback
// too: an armed watch hears it as it would on go-zookeeper's channel. A
// reconnection ends none: go-zookeeper sets the watches again on the new
// connection, and their events come through the same callback.

// watchKind is what a watch fires on, as go-zookeeper groups them.
type watchKind uint8

const (
	// kindData: GetW, or ExistsW of a node that exists.
	kindData watchKind = iota
	// kindExist: ExistsW of a node that does not exist.
	kindExist
	// kindChild: ChildrenW.
	kindChild
)

// firedBy reports whether an event of type t ends a watch of kind k
// (go-zookeeper's notifyWatches). EventNotWatching, and any type it does
// not send to a node watch, ends every kind.
func (k watchKind) firedBy(t zk.EventType) bool {
	switch t {
	case zk.EventNodeCreated:
		return k == kindExist
	case zk.EventNodeDataChanged:
		return k == kindExist || k == kindData
	case zk.EventNodeChildrenChanged:
		return k == kindChild
	}
	return true
}

// watchKey is a path (with its namespace) on one connection: an event of
// an old connection must not fire a watch set on its successor.
type watchKey struct {
	conn *zk.Conn
	path string
}

// pendingRead is the reads of one path in flight.
type pendingRead struct {
	n    int
	seen bool // an event of the path came while one was in flight
}

// armedWatch is one watch waiting in the table.
type armedWatch struct {
	kind  watchKind
	out   chan Event // buffered: the one send never blocks the receive loop
	ended bool       // fired, or its context ended: out is closed
	stop  func() bool
}

// watchTable is the watches armed on every connection of a client; the
// zero value is ready.
type watchTable struct {
	mu      sync.Mutex
	pending map[watchKey]pendingRead
	armed   map[watchKey][]*armedWatch
	carried atomic.Int64 // the watches carried by watchOf's goroutine
}

// Watches is how many watches set with GetW, ChildrenW and ExistsW have
// neither fired nor been given up (their ctx ended): each holds a channel
// in the client until its node changes, its session expires or its
// connection is closed. A count that grows without bound is a watch set
// again and again on a node that does not change.
func (c *Client) Watches() int {
	t := &c.watches
	t.mu.Lock()
	n := 0
	for _, list := range t.armed {
		n += len(list)
	}
	t.mu.Unlock()
	return n + int(t.carried.Load())
}

// readWatched sends read, a request that leaves a watch on full (a path
// with its namespace) on conn and returns go-zookeeper's channel of it and
// its kind, between the table's pend and arm: the watch's channel is
// returned (nil when none was left).
func (c *Client) readWatched(ctx context.Context, conn *zk.Conn, full string, read func() (<-chan zk.Event, watchKind)) <-chan Event {
	k := watchKey{conn, full}
	c.watches.pend(k)
	zch, kind := read()
	return c.arm(ctx, k, zch, kind)
}

// pend notes a read of k about to be sent; arm must follow it.
func (t *watchTable) pend(k watchKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = make(map[watchKey]pendingRead)
		t.armed = make(map[watchKey][]*armedWatch)
	}
	p := t.pending[k]
	p.n++
	t.pending[k] = p
}

// arm ends the read of k that pend noted, whose reply left go-zookeeper's
// watch zch (nil: no watch was left), and returns the watch's channel: it
// delivers one Event, or is closed without one when ctx ends.
func (c *Client) arm(ctx context.Context, k watchKey, zch <-chan zk.Event, kind watchKind) <-chan Event {
	t := &c.watches
	t.mu.Lock()
	p := t.pending[k]
	seen := p.seen
	if p.n--; p.n == 0 {
		delete(t.pending, k)
	} else {
		t.pending[k] = p
	}
	if zch == nil {
		t.mu.Unlock()
		return nil
	}
	if seen {
		t.mu.Unlock()
		return c.watchOf(ctx, zch)
	}
	w := &armedWatch{kind: kind, out: make(chan Event, 1)}
	t.armed[k] = append(t.armed[k], w)
	t.mu.Unlock()
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { t.drop(k, w) })
		t.mu.Lock()
		if w.ended {
			stop() // fired already
		} else {
			w.stop = stop
		}
		t.mu.Unlock()
	}
	return w.out
}

// drop closes w's channel without an event (its context ended), unless it
// fired already.
func (t *watchTable) drop(k watchKey, w *armedWatch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w.ended {
		return
	}
	w.ended = true
	close(w.out)
	t.remove(k, func(x *armedWatch) bool { return x == w })
}

// fire delivers ev, an event of conn, to the watches it ends, and notes it
// for the reads of its path in flight. It runs on go-zookeeper's receive
// loop (or its connection loop, for EventNotWatching) and never blocks.
func (c *Client) fire(conn *zk.Conn, ev zk.Event) {
	t := &c.watches
	k := watchKey{conn, ev.Path}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.pending[k]; ok {
		p.seen = true
		t.pending[k] = p
	}
	if len(t.armed[k]) == 0 {
		return
	}
	e := c.eventOf(ev)
	t.remove(k, func(w *armedWatch) bool {
		if !w.kind.firedBy(ev.Type) {
			return false
		}
		w.ended = true
		w.out <- e
		close(w.out)
		if w.stop != nil {
			w.stop()
		}
		return true
	})
}

// remove drops the watches of k that gone reports; t.mu is held.
func (t *watchTable) remove(k watchKey, gone func(*armedWatch) bool) {
	list := t.armed[k]
	kept := list[:0]
	for _, w := range list {
		if !gone(w) {
			kept = append(kept, w)
		}
	}
	clear(list[len(kept):]) // no pointer to a gone watch stays in the array
	if len(kept) == 0 {
		delete(t.armed, k)
		return
	}
	t.armed[k] = kept
}
