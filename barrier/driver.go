package barrier

import "slices"

// The decisions of a double barrier's member are pure functions of the
// barrier's children, so that they are table-tested with no server; the
// methods of Double only read the children, act and wait.

// ReadyNode is the name of the node under a double barrier's path whose
// existence opens it (Curator's READY_NODE): created, persistent, by the
// member that sees enough members, deleted by the last one out.
const ReadyNode = "ready"

// enterStep is what a member in Enter does next.
type enterStep int

const (
	// enterWait: fewer members than the threshold and no ready node; wait
	// for the ready node's creation, then look again.
	enterWait enterStep = iota
	// enterOpen: enough members are in; create the ready node (it may
	// exist already) and go through.
	enterOpen
	// enterThrough: the ready node exists; go through.
	enterThrough
	// enterLost: our member node is gone (its session ended, or someone
	// deleted it): we are no longer counted, so we may not go through.
	enterLost
)

// decideEnter decides on the barrier's children (names) for our member
// node ours and the threshold of members.
func decideEnter(children []string, ours string, threshold int) enterStep {
	// Our node first: a member whose node is gone is not counted by the
	// others, so letting it through would break the barrier's promise.
	if !slices.Contains(children, ours) {
		return enterLost
	}
	if slices.Contains(children, ReadyNode) {
		return enterThrough
	}
	// Counted afresh on every wakeup (GH-1290: a wakeup is no proof).
	if len(children) >= threshold {
		return enterOpen
	}
	return enterWait
}

// leaveStep is what a member in Leave does next.
type leaveStep int

const (
	// leaveDone: no member is left; go through (and delete the ready node).
	leaveDone leaveStep = iota
	// leaveLast: ours is the only member left; delete it and go through.
	leaveLast
	// leaveWatchHighest: ours is the lowest of several; keep it (the others
	// wait for it) and wait for the highest to go.
	leaveWatchHighest
	// leaveWatchLowest: delete ours if it is still there and wait for the
	// lowest to go, which it does last.
	leaveWatchLowest
	// leaveLost: our node is gone though we never deleted it.
	leaveLost
)

// decideLeave decides on the barrier's children for our member node ours,
// which exists unless we deleted it (ourExists false). It returns the step
// and, for the watch steps, the member to watch.
func decideLeave(children []string, ours string, ourExists bool) (leaveStep, string) {
	members := membersOf(children)
	if len(members) == 0 {
		return leaveDone, ""
	}
	i := slices.Index(members, ours)
	switch {
	case i < 0 && ourExists:
		return leaveLost, ""
	case i == 0 && len(members) == 1:
		return leaveLast, ""
	case i == 0:
		// The ZooKeeper recipe: the lowest leaves last, so the others
		// need only watch it, and it watches one of them at a time.
		return leaveWatchHighest, members[len(members)-1]
	}
	// Curator lets a member whose node is gone through when one member
	// is left: that one may not have left yet. Wait for it instead.
	return leaveWatchLowest, members[0]
}

// membersOf is the member nodes among children (all but the ready node),
// sorted as Curator sorts them (Java's String order, which is byte order
// for the ASCII of UUIDs).
func membersOf(children []string) []string {
	m := slices.DeleteFunc(slices.Clone(children), func(n string) bool { return n == ReadyNode })
	slices.Sort(m)
	return m
}
