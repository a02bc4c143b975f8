package multilock

import (
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// What a MultiLock's reports to a locktrace.Trace call it: LockID{Backend:
// "multi", Kind: "multilock", Name: its members' names, joined}. Only the
// trace of the context of Acquire or TryAcquire hears of it (a MultiLock
// has no options); the members report their own acquisitions and leases
// too, each to the trace of its context (the same) and its own.
const (
	traceBackend = "multi"
	traceKind    = "multilock"
)

// contention tells a traced acquisition of a MultiLock that a member found
// its lock held (or a waiter ahead): the members' context carries a trace
// whose AcquireQueued is queued, and a member's TryAcquire refused with
// recipes.ErrLocked calls it too. That trace stays in the members' lease
// contexts, and so in the MultiLock's lease context, after the
// acquisition: end makes it do nothing from then on.
type contention struct {
	mu sync.Mutex
	a  *hold.Acquisition // nil once the acquisition is over
}

// queued reports AcquireQueued for the MultiLock, the first time. c may be
// nil (an untraced acquisition).
func (c *contention) queued(locktrace.AcquireQueuedInfo) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.a.Queued() // nil-safe
}

// end detaches c from its acquisition, before the acquisition's Done.
func (c *contention) end() {
	c.mu.Lock()
	c.a = nil
	c.mu.Unlock()
}
