package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Child is one node under a lock path, as the engine orders them: the
// parsed name (znode.ParseChild), which the recipes' drivers see.
type Child = znode.Child

// SortChildren parses names and returns the queue entries in queue order:
// by sequence, then by the position of their kind in lockNames, then by
// name. Only a downgraded read node shares a sequence (its writer's): listing
// the write kind first keeps it right behind its writer. Names that are not
// queue entries are left out.
func SortChildren(names []string, lockNames ...string) []Child {
	out := make([]Child, 0, len(names))
	for _, n := range names {
		if c, ok := znode.ParseChild(n, lockNames...); ok {
			out = append(out, c)
		}
	}
	rank := func(kind string) int {
		for i, ln := range lockNames {
			if ln == kind {
				return i
			}
		}
		return len(lockNames)
	}
	slices.SortFunc(out, func(a, b Child) int {
		if c := cmp.Compare(a.Seq, b.Seq); c != 0 {
			return c
		}
		if c := cmp.Compare(rank(a.Kind), rank(b.Kind)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// indexOf returns the position of name in children, or -1.
func indexOf(children []Child, name string) int {
	for i, c := range children {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Decision is what a Driver tells the engine.
type Decision struct {
	// Owns: the node holds the lock.
	Owns bool
	// Watch is the node to wait on when the node does not own the lock.
	Watch string
	// FastHandoff: when Watch is deleted, the node owns the lock without
	// listing the children again, because Watch was the only node ahead that
	// could keep it out and no node can get ahead later.
	FastHandoff bool
	// Refresh, if set, is a node further ahead whose deletion makes the
	// engine list the children again before Watch goes: typically the
	// predecessor's predecessor, so that by the time the predecessor
	// releases, the engine knows it was the head and takes the fast handoff
	// instead of listing on the critical path.
	Refresh string
	// RefreshIsHead: Refresh is the head and Watch is right behind it, and
	// no node can get ahead of ours, before Refresh goes or after (Refresh
	// is of the recipe's own kind, which never adds a node beside itself).
	// Refresh's deletion then leaves the last listing without it as the
	// queue ahead of ours, but for Watch, whose watch is still armed: the
	// engine decides again from that listing, with no request.
	RefreshIsHead bool
}

// Driver decides, from the children of a lock path in queue order, whether
// the node at index ours owns the lock and, if not, what it waits for. It
// must be a pure function: the engine does all I/O.
type Driver interface {
	Decide(children []Child, ours int) (Decision, error)
}

// LeaseDriver is Curator's StandardLockInternalsDriver: the first Leases
// nodes own the lock; any other node watches the node Leases places ahead of
// it. With Leases = 1 it is the mutex: each waiter watches its predecessor.
type LeaseDriver struct {
	Leases int
	// Kind is the recipe's own lock name. The fast handoff is taken only
	// when the watched head is of this kind: a node of another recipe in the
	// same parent (a read/write lock's writer) might create a node ahead of
	// ours (a downgrade) before it goes.
	Kind string
	// Lookahead also watches the node two ahead (Decision.Refresh), so that
	// a waiter learns it is next before its predecessor releases. Off by
	// default: then each waiter watches only its predecessor.
	Lookahead bool
}

// Decide implements Driver.
func (d LeaseDriver) Decide(children []Child, ours int) (Decision, error) {
	if d.Leases < 1 {
		return Decision{}, fmt.Errorf("%w: %d leases", recipes.ErrInvalidArgument, d.Leases)
	}
	if ours < 0 || ours >= len(children) {
		return Decision{}, fmt.Errorf("our node is not among the %d children of the lock path", len(children))
	}
	if ours < d.Leases {
		return Decision{Owns: true}, nil
	}
	watch := ours - d.Leases
	dec := Decision{Watch: children[watch].Name}
	if d.Leases == 1 {
		// The watched node is the head: all nodes created later sort after
		// ours, so its deletion makes ours the head.
		dec.FastHandoff = watch == 0 && d.ownKind(children[0])
		if watch > 0 && d.Lookahead {
			dec.Refresh = children[watch-1].Name
			// The head goes first in a queue that moves: deciding again
			// from the listing without it spares a request per
			// acquisition. Not behind a head of another kind, which might
			// add a node ahead of ours before it goes (a downgrade).
			dec.RefreshIsHead = watch == 1 && d.ownKind(children[0])
		}
	}
	return dec, nil
}

// ownKind reports whether c is a node of the recipe's own kind, one that
// never adds a node beside itself.
func (d LeaseDriver) ownKind(c Child) bool { return c.Kind == d.Kind && d.Kind != "" }
