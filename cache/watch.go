package cache

import (
	"strings"
	"sync"

	"github.com/zkrecipes/zkrecipes/session"
)

// A cache's watches cost no goroutine: they are set with the client's
// GetWatch, ChildrenWatch and ExistsWatch, whose events come on the one
// stream of the client's notifications (session.Client.Notifications),
// which the cache reads from its start. Their bookkeeping is a set of
// kinds per path.

// kind is a set of a node's watches.
type kind uint8

const (
	dataWatch  kind = 1 << iota // GetWatch, or ExistsWatch on the missing path
	childWatch                  // ChildrenWatch
)

// watches says which of each path's watches are armed: set in the current
// session and not yet seen to fire. A notification only ever clears a
// watch, and makes the loop read its node again, which arms it again: a
// watch believed armed is either on the server or its firing is queued for
// the loop (a watch believed fired but on the server costs only a second
// registration, which the server keeps as one).
type watches struct {
	mu sync.Mutex
	m  map[string]kind
}

// isArmed says whether path has a live watch of kind k.
func (w *watches) isArmed(path string, k kind) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[path]&k != 0
}

// arm records a new watch of kind k on path.
func (w *watches) arm(path string, k kind) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m[path] |= k
}

// fired forgets path's watches of kinds k: the server fires a watch once.
func (w *watches) fired(path string, k kind) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a := w.m[path] &^ k; a != 0 {
		w.m[path] = a
	} else {
		delete(w.m, path)
	}
}

// reset forgets every watch: a new session has none of the old ones.
func (w *watches) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.m)
}

// report is one notification of the client's, for the loop.
type report struct {
	path string
	ev   session.EventType
}

// kinds is the kinds of watch that fire with the event: the server fires a
// node's data watch on its creation, change or deletion, and its children
// watch on a change of its children or its deletion.
func (r report) kinds() kind {
	switch r.ev {
	case session.EventNodeChildrenChanged:
		return childWatch
	case session.EventNodeDeleted:
		return dataWatch | childWatch
	}
	return dataWatch
}

// inbox is the unbounded queue of reports from the notifications to the
// loop.
type inbox struct {
	mu      sync.Mutex
	reports []report
	wake    chan struct{}
}

func newInbox() inbox { return inbox{wake: make(chan struct{}, 1)} }

func (in *inbox) push(r report) {
	in.mu.Lock()
	in.reports = append(in.reports, r)
	in.mu.Unlock()
	in.signal()
}

// signal wakes the loop.
func (in *inbox) signal() {
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (in *inbox) take() []report {
	in.mu.Lock()
	defer in.mu.Unlock()
	r := in.reports
	in.reports = nil
	return r
}

// listen hands the client's notifications of paths at or below the root to
// the loop, until the cache ends (the stream then closes). EventNotWatching
// is left out: it comes when a session expired or a connection closed, of
// which the client's states tell the cache too (follow), and a new session
// is resynchronised with all its watches set again; it may also come late,
// from a connection left after the new session's watches were set.
func (x *Cache) listen(notes <-chan session.Event) {
	for ev := range notes {
		if ev.Type != session.EventNotWatching && x.under(ev.Path) {
			x.inbox.push(report{path: ev.Path, ev: ev.Type})
		}
	}
}

// under says whether p is the root or below it.
func (x *Cache) under(p string) bool {
	switch {
	case p == x.root || x.root == "/":
		return true
	default:
		return strings.HasPrefix(p, x.root) && len(p) > len(x.root) && p[len(x.root)] == '/'
	}
}
