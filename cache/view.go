package cache

import (
	"slices"

	"github.com/zkrecipes/zkrecipes/session"
)

// The view's changes; the caller holds x.mu and is the loop.

// addLocked puts the loaded nodes in the view, each under its parent, and
// returns a Created event for each, parents first.
func (x *Cache) addLocked(got map[string]*entry) []Event {
	events := make([]Event, 0, len(got))
	for _, p := range sortedKeys(got) {
		e := got[p]
		x.view[p] = e
		if p != x.root {
			pp := session.ParentPath(p)
			if parent := x.view[pp]; parent != nil && x.wantChildren(pp) {
				if parent.kids == nil {
					parent.kids = map[string]struct{}{}
				}
				parent.kids[session.BaseName(p)] = struct{}{}
			}
		}
		events = append(events, Event{Type: Created, Node: e.node})
	}
	return events
}

// removeLocked takes p and its subtree out of the view and returns a
// Deleted event for each, children first.
func (x *Cache) removeLocked(p string) []Event {
	e := x.view[p]
	if e == nil {
		return nil
	}
	var events []Event
	for _, k := range sortedKeys(e.kids) {
		events = append(events, x.removeLocked(session.JoinPath(p, k))...)
	}
	delete(x.view, p)
	if len(x.refused) > 0 {
		x.forgetRefusedLocked(p) // its refused children are gone from the view's reach
	}
	if p != x.root {
		if parent := x.view[session.ParentPath(p)]; parent != nil {
			delete(parent.kids, session.BaseName(p))
		}
	}
	return append(events, Event{Type: Deleted, Node: e.node})
}

// nodesOf is a view's nodes, for diff.
func nodesOf(v map[string]*entry) map[string]Node {
	nodes := make(map[string]Node, len(v))
	for p, e := range v {
		nodes[p] = e.node
	}
	return nodes
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
