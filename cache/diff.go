package cache

import (
	"slices"
	"strings"
)

// diff returns the events that turn the view old into the view now, both
// keyed by path: Deleted for every node gone or created again (a new
// czxid), children before their parents; then Created for every node new
// or created again, and Changed for every node whose data was written
// (same czxid, another mzxid), parents before their children. A node
// with the same czxid and mzxid gets no event: whatever happened to it
// meanwhile, it holds what the view showed.
func diff(old, now map[string]Node) []Event {
	var gone, came []string
	for p, o := range old {
		if n, ok := now[p]; !ok || n.Stat.Czxid != o.Stat.Czxid {
			gone = append(gone, p)
		}
	}
	for p, n := range now {
		if o, ok := old[p]; !ok || n.Stat.Czxid != o.Stat.Czxid || n.Stat.Mzxid != o.Stat.Mzxid {
			came = append(came, p)
		}
	}
	// A parent's path is a prefix of its children's, so it sorts first.
	slices.SortFunc(gone, func(a, b string) int { return strings.Compare(b, a) })
	slices.Sort(came)
	events := make([]Event, 0, len(gone)+len(came))
	for _, p := range gone {
		events = append(events, Event{Type: Deleted, Node: old[p]})
	}
	for _, p := range came {
		t := Created
		if o, ok := old[p]; ok && o.Stat.Czxid == now[p].Stat.Czxid {
			t = Changed
		}
		events = append(events, Event{Type: t, Node: now[p]})
	}
	return events
}
