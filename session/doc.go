// Package session is the session manager every recipe in zkrecipes takes: one
// long-lived ZooKeeper client over github.com/go-zookeeper/zk, what Curator's
// CuratorFramework and ConnectionStateManager give Java users. It logs
// nothing unless given a logger (WithLogger).
//
// Connect opens a Client and waits for its first session. The Client then
// keeps a session for as long as it is open: it reconnects after a dropped
// connection, and after the session is lost (expired by the server, or
// suspended for longer than the session timeout, which is Curator's simulated
// expiry) it opens a new one. Every change is reported as a StateChange to the
// channels returned by Subscribe, in order, none dropped:
//
//	Connected -> Suspended -> Reconnected          the same session survived
//	Connected -> Suspended -> Lost -> Reconnected  a new session
//
// The current session is a value (Session) with an ID and a Done channel that
// closes when that session can no longer be trusted. What "trusted" means is
// the client's ErrorPolicy: by default (SuspendedIsLost, Curator's standard
// policy) a Suspended connection already ends the session value, and the
// Reconnected state brings a new value with the same ID; with OnlyLostIsLost
// a session value survives suspensions and ends when the session is lost or
// when the client's own clock says the server may soon expire it. Nothing
// that belonged to an ended session value is carried over to the next one:
// recipes that held locks under it see their leases end and clean up their
// nodes.
//
// Secured ensembles: WithDigestAuth gives the client an identity, WithACL
// the ACL of every node it and its recipes create (AuthACL(PermAll):
// its creator's alone, so no client without the credentials can delete a
// holder's node), and WithTLS reaches a TLS client port.
//
// # What is guaranteed, and by how much
//
// The server expires a session one session timeout t (the timeout it
// granted) after it last heard from the client; on an ensemble, after its
// leader last heard of it. Only a reply proves that the member which sent
// it heard a request, at or after the moment it was sent; the watch
// notifications it keeps sending to a client it no longer hears prove
// nothing. And a follower or an observer cut off from the rest of the
// ensemble goes on answering its clients by itself for syncLimit ×
// tickTime (10 s with ZooKeeper's defaults) while the leader, which no
// longer hears of their sessions, expires them. So the client keeps, on
// its monotonic clock, the send time H of the latest request of the
// session whose reply came back (go-zookeeper's pings and the client's
// own keepalives included), and the send time L of the latest request the
// leader is proven to have heard: a request answered, then, a leader ping
// period later (tickTime/2, at most t/4), a sync answered, then a write
// answered without error, all on one connection, prove that the leader
// applied the first request's touch before it committed the write through
// a quorum (proof.go says why, and which holes remain). The client's own
// writes serve; when they do not come often enough, it sends a round of
// one sync and one check-only multi (a zxid, no change) at once on each new
// connection and then every quarter of the session timeout at most (about 4
// of each per session timeout): a healthy session is proven about t/2
// behind, so a sync and a write slower than about t/20 read as a member
// that cannot prove. Then it:
//
//   - under SuspendedIsLost, reports Suspended, ends the session value and
//     drops the connection at H + 2/3 t or L + 3/4 t, whichever comes
//     first: at least t/4 before the server may expire the session, and
//     the client moves to a member that can prove;
//   - under OnlyLostIsLost, drops the connection at the same moments, and
//     ends the session value at L + t - D at the latest, whether or not it
//     is connected; D is recipes.DriftMargin(t), which every backend uses:
//     1% of t for clock-rate drift plus 10ms for the client's own
//     scheduling.
//
// Session.Err reads the clock and reports the end at that deadline even
// before the timer has run, and the recipes check it at every grant,
// including a grant by watch notification. Session.ServerDeadline (and the
// told-first margin every trace reports) counts from L, so it is never
// later than the real one. The proof assumes tickTime ≤ t/2, which the
// servers' default minSessionTimeout (2 × tickTime) guarantees; with a
// lower minSessionTimeout, tell the client the tickTime (WithServerTick).
// The margin is against the server's clock running no more than 1% faster
// than the client's; a client process that is paused (SIGSTOP, a VM
// migration) for longer than the margin cannot be told in time by any
// timer: fence writes with the lease's token.
//
// # A sick member costs one bounded attempt
//
// A member that accepts connections and does not answer (a long GC pause, a
// stopped process, a member loading its snapshot, a stalled disk) is the
// most common sick member. Each connection attempt, from the dial to the
// connect response, gets t/n for n server addresses, and never more than
// t/3 (ZooKeeper's Java client gives t/n); then it is abandoned, a warning
// names the server, and the next address is tried at once. The client
// pauses a second only after every address has failed since its last
// connection. So with one sick member among healthy ones, Connect succeeds
// and a reconnection completes within one bounded attempt plus one connect,
// before the server may expire the session. (go-zookeeper alone gives the
// handshake 10 × 2/3 t, which loses sessions to one sick member.)
//
// Operations (Create, Get, Children, Delete, Set, Multi, ...) take a context,
// apply the client's namespace to every path, create missing parents as
// container nodes where asked, and are retried under the client's
// RetryPolicy when they fail with a retryable error (connection loss,
// operation timeout). Sequential creates and Multi are not retried: they are
// not idempotent, and the recipes handle them with Curator's protected mode.
// A write larger than the server accepts (DefaultMaxRequestSize, or
// WithMaxRequestSize) is refused before it is sent: the server would drop
// the connection. Their types are the package's own, as Curator's are:
// CreateMode, Stat, Event (a watch's one report, on a channel of its
// own), ACL and OpResult; ZooKeeper's errors are re-exported (ErrNoNode,
// ErrNodeExists, ErrBadVersion, ErrNoAuth, ...), so no user imports
// go-zookeeper.
//
// Fencing backed by ZooKeeper: a Multi that starts with a CheckOp of a lock
// node applies its other operations only while that node exists (the lock
// leases of znode do it for their own node, with GuardedMulti), and
// FencedResource refuses writes that carry a fencing token lower than one
// it has already seen.
package session
