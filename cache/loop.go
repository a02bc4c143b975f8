package cache

import (
	"slices"
	"time"

	"github.com/zkrecipes/zkrecipes/session"
)

// The loop's waits after a failed read of the view, doubling from
// retryBase to retryCap while the failures go on. A read fails only after
// the client's own retries (session.RetryPolicy) gave up; a read the
// node's ACL refuses is not a failure, but a Refused node (refused.go).
const (
	retryBase = 100 * time.Millisecond
	retryCap  = 5 * time.Second
)

// run is the loop: the one goroutine that changes the view. It reads the
// whole view again when told to (at the start, and after each
// reconnection), then handles the notifications, each by one read of the
// node that changed.
func (x *Cache) run() {
	var delay time.Duration
	for x.ctx.Err() == nil {
		failed := x.mustResync() && x.resynchronise() != nil
		if !failed {
			failed = x.drain()
		}
		if !failed {
			delay = 0
			if !x.mustResync() {
				x.sleep(nil)
			}
			continue
		}
		delay = min(max(2*delay, retryBase), retryCap)
		t := time.NewTimer(delay)
		x.sleep(t.C)
		t.Stop()
	}
}

// sleep waits for a report or a change of state, the end of the cache, or
// retry.
func (x *Cache) sleep(retry <-chan time.Time) {
	select {
	case <-x.inbox.wake:
	case <-retry:
	case <-x.ctx.Done():
	}
}

// mustResync says whether the view must be read again now.
func (x *Cache) mustResync() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.resync && x.fresh.Connected
}

// follow keeps Freshness in step with the client's connection states. It
// runs on its own goroutine, so that Stale is told at once, even while the
// loop waits on a read.
func (x *Cache) follow(states <-chan session.StateChange) {
	for ch := range states {
		x.mu.Lock()
		x.gen++
		switch ch.State {
		case session.Suspended, session.Lost:
			x.fresh.Connected = false
			x.resync = true
			if x.fresh.StaleSince.IsZero() {
				x.fresh.StaleSince = ch.Time
				x.events.push(Event{Type: Stale})
			}
		case session.Connected, session.Reconnected, session.ReadOnly:
			// Watches set before were re-armed by the client if the
			// session is the same, and are gone if it is new; either
			// way a change may have been missed: read the view again.
			x.fresh.Connected = true
			x.sessID = ch.SessionID
			x.resync = true
		case session.Closed:
			x.fresh.Connected = false
			x.cancel()
		}
		x.mu.Unlock()
		x.inbox.signal()
	}
}

// resynchronise reads the whole view again and sends exactly the
// difference from what the view showed. When the connection did not
// change meanwhile, the view is fresh again: Initialized the first time,
// Fresh after a Stale.
func (x *Cache) resynchronise() error {
	x.mu.Lock()
	gen, sess := x.gen, x.sessID
	x.resync = false
	x.mu.Unlock()
	if sess != x.watchSess {
		// A new session holds none of the old session's watches.
		x.w.reset()
		x.watchSess = sess
	}
	got, refused, err := x.load([]string{x.root})
	if err != nil {
		x.failed("read the view", err)
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.events.push(diff(nodesOf(x.view), nodesOf(got))...)
	x.view = got
	x.events.push(x.replaceRefusedLocked([]string{x.root}, refused)...)
	if x.gen != gen || !x.fresh.Connected {
		return nil // follow asked for another
	}
	switch {
	case !x.fresh.Initialized:
		x.fresh.Initialized = true
		x.events.push(Event{Type: Initialized})
		close(x.init)
	case !x.fresh.StaleSince.IsZero():
		x.events.push(Event{Type: Fresh})
	}
	x.fresh.StaleSince = time.Time{}
	return nil
}

// drain handles the notifications. On a failed read it asks for a
// resynchronisation, which re-arms the watches of the notifications left.
func (x *Cache) drain() (failed bool) {
	reports := x.inbox.take()
	for i, r := range reports {
		if err := x.handle(r); err != nil {
			x.failed("read "+r.path, err)
			for _, rest := range reports[i+1:] {
				x.w.fired(rest.path, rest.kinds())
			}
			return true
		}
	}
	return false
}

// failed asks for a resynchronisation after a failed read.
func (x *Cache) failed(what string, err error) {
	if x.ctx.Err() != nil {
		return
	}
	x.c.Logger().Debug("cache: "+what, "path", x.root, "err", err)
	x.mu.Lock()
	x.resync = true
	x.mu.Unlock()
}

// handle acts on one notification: the watches it fired are gone, and a
// read of what it is about re-arms them. The notification may be of a
// watch another user of the client set, or of one the cache has replaced
// since: the read then finds nothing new, and sends nothing. A path the
// view does not hold (not cached, or not yet) is not read.
func (x *Cache) handle(r report) error {
	x.w.fired(r.path, r.kinds())
	switch r.ev {
	case session.EventNodeChildrenChanged:
		return x.refreshChildren(r.path)
	case session.EventNodeDeleted:
		// Its children watch fired too: if it is there again (created
		// anew, and read already), its children are listed again.
		if err := x.refreshNode(r.path); err != nil {
			return err
		}
		return x.refreshChildren(r.path)
	}
	return x.refreshNode(r.path)
}

// refreshNode reads p again after its data watch fired: Changed if its
// data was written, Deleted (with its subtree) if it is gone, Deleted then
// Created if it was created again (another czxid).
func (x *Cache) refreshNode(p string) error {
	e := x.view[p] // only this goroutine writes the view
	if e == nil {
		if p != x.root {
			return nil // not cached: its parent's listing decides
		}
		return x.loadInto([]string{p}, nil)
	}
	n, ok, err := x.readData(p)
	switch {
	case err != nil && isRefusal(err):
		return x.refuse(p, err)
	case err != nil:
		return err
	case !ok || n.Stat.Czxid != e.node.Stat.Czxid:
		x.mu.Lock()
		gone := x.removeLocked(p)
		x.mu.Unlock()
		if !ok && p != x.root {
			x.events.push(gone...)
			return nil
		}
		return x.loadInto([]string{p}, gone)
	case n.Stat.Mzxid != e.node.Stat.Mzxid:
		x.mu.Lock()
		e.node = n
		x.events.push(Event{Type: Changed, Node: n})
		x.mu.Unlock()
	}
	return nil
}

// refreshChildren lists p's children again after its children watch
// fired: Created for each new one (with its subtree), Deleted for each
// gone (with its subtree).
func (x *Cache) refreshChildren(p string) error {
	e := x.view[p]
	if e == nil || !x.wantChildren(p) {
		return nil
	}
	names, ok, err := x.readKids(p)
	if err != nil && isRefusal(err) {
		return x.refuse(p, err)
	}
	if err != nil {
		return err
	}
	if !ok {
		return x.refreshNode(p)
	}
	var gone []Event
	now := make(map[string]struct{}, len(names))
	for _, k := range names {
		now[k] = struct{}{}
	}
	x.mu.Lock()
	for _, k := range sortedKeys(e.kids) {
		if _, ok := now[k]; !ok {
			gone = append(gone, x.removeLocked(session.JoinPath(p, k))...)
		}
	}
	for r := range x.refused {
		if _, ok := now[session.BaseName(r)]; !ok && r != x.root && session.ParentPath(r) == p {
			x.forgetRefusedLocked(r) // gone: not refused any more
		}
	}
	x.mu.Unlock()
	var tops []string
	for _, k := range names {
		if _, ok := e.kids[k]; !ok {
			tops = append(tops, session.JoinPath(p, k))
		}
	}
	slices.Sort(tops)
	return x.loadInto(tops, gone)
}

// loadInto loads the subtrees at tops into the view and sends the events
// before, then Created for each node loaded, parents first, then Refused
// for each newly refused.
func (x *Cache) loadInto(tops []string, before []Event) error {
	var got map[string]*entry
	var refused map[string]error
	var err error
	if len(tops) > 0 {
		got, refused, err = x.load(tops)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.events.push(before...)
	if err != nil {
		return err
	}
	x.events.push(x.addLocked(got)...)
	x.events.push(x.replaceRefusedLocked(tops, refused)...)
	return nil
}

// replaceRefusedLocked sets the refusals at and below tops, just read, to
// refused, and returns a Refused event for each that is news.
func (x *Cache) replaceRefusedLocked(tops []string, refused map[string]error) []Event {
	for r := range x.refused {
		if _, still := refused[r]; still {
			continue
		}
		for _, t := range tops {
			if r == t || x.below(r, t) {
				delete(x.refused, r)
				break
			}
		}
	}
	var events []Event
	for _, p := range sortedKeys(refused) {
		events = append(events, x.refuseLocked(p, refused[p])...)
	}
	return events
}
