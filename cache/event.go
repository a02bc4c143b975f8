package cache

import (
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/session"
)

// Node is one cached node: its path, its data (nil under WithoutData) and
// its Stat as of the last read of its data.
type Node struct {
	Path string
	Data []byte
	Stat session.Stat
}

// EventType is what an Event tells.
type EventType int

// The events, in the one ordered stream of Events.
const (
	// Created: a node entered the view (created on the server, or found by
	// the first load or a resynchronisation).
	Created EventType = iota + 1
	// Changed: a node's data was written (its mzxid moved; its czxid is
	// the same).
	Changed
	// Deleted: a node left the view; Event.Node is the last view of it.
	// A node deleted and created again is Deleted, then Created: the two
	// are told apart by czxid, never by version (which starts again at 0).
	Deleted
	// Initialized: the first load is complete; sent once.
	Initialized
	// Stale: the connection was suspended; the view is kept and served,
	// but changes on the server may be missing from it until Fresh.
	Stale
	// Fresh: the view was read again after a reconnection, and the events
	// of what changed meanwhile were sent before this one.
	Fresh
	// Refused: the node at Node.Path is on the server, but its ACL
	// refuses this client's identity the read of its data or children
	// (Event.Err, which is recipes.ErrRefused and session.ErrNoAuth); it
	// is not in the view, nor is its subtree (a node that was is Deleted
	// first: it left the view). Sent once when a node becomes refused;
	// Freshness.Refused lists the nodes refused now.
	Refused
)

var eventNames = [...]string{Created: "Created", Changed: "Changed", Deleted: "Deleted",
	Initialized: "Initialized", Stale: "Stale", Fresh: "Fresh", Refused: "Refused"}

func (t EventType) String() string {
	if t > 0 && int(t) < len(eventNames) {
		return eventNames[t]
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one change of the view, or of its freshness. Node is the zero
// Node for Initialized, Stale and Fresh, and holds only the path for
// Refused.
type Event struct {
	Type EventType
	Node Node
	// Err is the refusal for Refused; nil for the others.
	Err error
}

// Freshness says how far the view can be trusted.
type Freshness struct {
	// Initialized: the first load is complete.
	Initialized bool
	// Connected: the client is connected to a server.
	Connected bool
	// StaleSince is zero while the view is current; otherwise the moment
	// since which changes on the server may be missing from it (the
	// suspension of the connection, or Start before the first load).
	StaleSince time.Time
	// Refused is nil while every node the cache would hold is readable;
	// otherwise an error naming the nodes whose ACL refuses this client's
	// identity the read (up to maxNamed of them, and how many), which is
	// recipes.ErrRefused and session.ErrNoAuth. They are out of the view,
	// with their subtrees, and read again when their parent's children
	// change or the connection comes back (the path itself: only then); a
	// change of ACL fires no watch.
	Refused error
}

// queue is an unbounded FIFO of events between the cache and one reader:
// a consumer that stops reading blocks neither the cache nor the session.
type queue struct {
	mu     sync.Mutex
	events []Event
	wake   chan struct{}
	out    chan Event
}

func newQueue() *queue {
	return &queue{wake: make(chan struct{}, 1), out: make(chan Event)}
}

func (q *queue) push(evs ...Event) {
	if len(evs) == 0 {
		return
	}
	q.mu.Lock()
	q.events = append(q.events, evs...)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run delivers the events in order until done closes; then it closes the
// channel, dropping what was not read.
func (q *queue) run(done <-chan struct{}) {
	defer close(q.out)
	for {
		q.mu.Lock()
		batch := q.events
		q.events = nil
		q.mu.Unlock()
		for i, ev := range batch {
			select {
			case q.out <- ev:
				batch[i] = Event{} // let the delivered data go
			case <-done:
				return
			}
		}
		select {
		case <-q.wake:
		case <-done:
			return
		}
	}
}
