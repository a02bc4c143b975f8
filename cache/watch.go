package cache

import (
	"sync"

	"github.com/zkrecipes/zkrecipes/session"
)

// kind is which of a node's watches a report is about.
type kind int

const (
	dataWatch  kind = iota // GetW, or ExistsW on the missing path
	childWatch             // ChildrenW
)

// armed holds the tokens of a path's live watches; 0: none.
type armed [2]uint64

// watches keeps one watch of each kind per path at most. A watch fired
// (or ended) is told to the loop with its token; a report whose token is
// no longer the path's is stale (a watch of an older session, or one
// replaced) and dropped.
type watches struct {
	mu   sync.Mutex
	m    map[string]*armed
	last uint64
}

// isArmed says whether path has a live watch of kind k.
func (w *watches) isArmed(path string, k kind) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := w.m[path]
	return a != nil && a[k] != 0
}

// arm records a new watch of kind k on path and returns its token.
func (w *watches) arm(path string, k kind) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last++
	a := w.m[path]
	if a == nil {
		a = &armed{}
		w.m[path] = a
	}
	a[k] = w.last
	return w.last
}

// fired reports whether token is path's live watch of kind k, and if so
// forgets it: the server fires a watch once.
func (w *watches) fired(path string, k kind, token uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := w.m[path]
	if a == nil || a[k] != token {
		return false
	}
	a[k] = 0
	if a[dataWatch] == 0 && a[childWatch] == 0 {
		delete(w.m, path)
	}
	return true
}

// reset forgets every watch: a new session has none of the old ones.
func (w *watches) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.m)
}

// report is one watch's end, for the loop.
type report struct {
	path  string
	kind  kind
	token uint64
	ev    session.EventType
}

// inbox is the unbounded queue of reports from the watches to the loop.
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

// watch records the watch ch of kind k on path and forwards its event to
// the loop. The goroutine ends when the watch fires, ends, or the cache
// ends (the session's watch channel then closes too).
func (x *Cache) watch(path string, k kind, ch <-chan session.Event) {
	if ch == nil {
		return
	}
	token := x.w.arm(path, k)
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		select {
		case ev, ok := <-ch:
			if !ok {
				ev.Type = session.EventNotWatching
			}
			x.inbox.push(report{path: path, kind: k, token: token, ev: ev.Type})
		case <-x.ctx.Done():
		}
	}()
}
