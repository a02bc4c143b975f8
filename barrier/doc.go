// Package barrier is Curator's barriers family for Go
// (recipes.barriers): DistributedBarrier and DistributedDoubleBarrier, on
// Curator's nodes, so that Go and Java processes wait at the same
// barriers together.
//
// A Barrier (DistributedBarrier) is one persistent node: while it exists,
// WaitOnBarrier holds back whoever calls it; RemoveBarrier lets them all
// through.
//
//	b, err := barrier.NewBarrier(client, "/jobs/nightly/gate")
//	err = b.SetBarrier(ctx)      // by the coordinator
//	err = b.WaitOnBarrier(ctx)   // by the workers: returns once removed
//	err = b.RemoveBarrier(ctx)   // by the coordinator
//
// A Double (DistributedDoubleBarrier) makes a set of members start and
// finish a computation together. Each member creates an ephemeral node
// named by a UUID under the barrier's path; the member that sees the
// threshold of members creates the persistent node "ready" (ReadyNode),
// which lets every member through Enter. To leave, the lowest member (in
// the names' order) keeps its node until every other one has deleted
// its own and watches the highest; the others delete theirs and watch the
// lowest; the last out deletes "ready". The threshold is never stored:
// every member must be given the same one.
//
//	d, err := barrier.New(client, "/jobs/nightly/run", 3)
//	err = d.Enter(ctx) // returns once 3 members are in
//	// ... the computation ...
//	err = d.Leave(ctx) // returns once all of them are done
//
// Differences from Curator. Every wait takes a context. Every failure of
// Enter or Leave, cancellation included, deletes the member's node
// (Curator leaves it behind: CURATOR-80, CURATOR-318), so the others never
// count a member that gave up. No member goes through on a wakeup alone:
// the condition is read again after every one (Curator's GH-1290, a
// spurious wakeup that let a member through Enter; and its Leave, which
// lets a member whose node is gone through while one member is still in).
//
// Session loss. A suspended connection is waited out: a member's node
// lives as long as its session. When the session that owns a member's
// node ends (the server expired it, or the client gave it up after a
// suspension longer than the session timeout, session.Lost), the node is
// gone and the other members no longer count it: Enter, and Leave while
// the node counts, return an error that is ErrMemberLost and names the
// node. A Barrier's node is persistent: its waiters wait on across a new
// session.
package barrier
