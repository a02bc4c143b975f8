// Package session is the session manager every ZooKeeper recipe in
// zkrecipes takes: one long-lived ZooKeeper client over
// github.com/go-zookeeper/zk, what Curator's CuratorFramework and
// ConnectionStateManager give Java users. It logs nothing unless given a
// logger (WithLogger).
//
//	c, err := session.Connect(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"},
//		session.WithNamespace("/myapp"))
//	defer c.Close()
//	m, _ := mutex.New(c, "/locks/orders")
//
// Connect waits for the first session; the Client then keeps one for as
// long as it is open, reconnecting after a dropped connection and opening
// a new session after the old one is lost. Every change is a StateChange,
// delivered in order, none dropped, to the channels of Subscribe:
//
//	Connected -> Suspended -> Reconnected          the same session survived
//	Connected -> Suspended -> Lost -> Reconnected  a new session
//
// The current session is a value (Session) whose Done channel closes when
// it can no longer be trusted: under the default ErrorPolicy,
// SuspendedIsLost (Curator's), at a suspension; under OnlyLostIsLost when
// the session is lost or the client's clock says the server may soon
// expire it. Leases taken under an ended value end with it.
//
// The guarantee: a session value ends before the server may expire the
// session, with ZooKeeper's default settings, on a standalone server or on
// any member of an ensemble, a member cut off from the quorum included.
// Trust comes only from replies to requests the leader is proven to have
// heard, never from notifications. Under SuspendedIsLost the value ends at
// least t/4 before the server may expire the session (t: the session
// timeout); under OnlyLostIsLost, recipes.DriftMargin(t) before. A client
// process paused for longer than the margin cannot be told in time by any
// timer: fence writes with the lease's token. A member that accepts
// connections and never answers costs one connection attempt of at most
// t/3, not the session.
//
// Operations take a context, apply the namespace, and are retried on
// connection loss (RetryPolicy), but for sequential creates and Multi.
// An operation whose context ends returns at once, but what it sent may
// still be applied: every later operation of the client waits until it has
// been answered or failed, so a clean-up after a cancelled create (read the
// node, delete it) sees the create's outcome and nothing is left behind.
// FencedResource refuses writes that carry a lower token than one it saw.
//
// Secured ensembles: WithDigestAuth gives the client an identity, WithACL
// the ACL of every node it and its recipes create (AuthACL(PermAll): no
// client without the credentials can delete a holder's node), WithTLS
// reaches a TLS client port. A refused certificate or authentication is an
// error for which errors.Is(err, recipes.ErrRefused) holds; Connect fails
// at once when every server refused in one round. WithClientTrace reports
// connection states and attempts.
//
// docs/design.md, "Session manager", has the proof of the leader's
// hearing, the deadlines, their measured margins and what they cost.
package session
