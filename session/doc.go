// Package session is the session manager every recipe in zkrecipes takes: one
// long-lived ZooKeeper client over github.com/go-zookeeper/zk, what Curator's
// CuratorFramework and ConnectionStateManager give Java users.
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
// a session value ends when the session is lost, or three quarters of a
// session timeout after the server last sent anything, before the server
// may expire it (see ErrorPolicy). The client times the server's silence
// itself: a watchdog reports Suspended after two thirds of a session timeout
// without a byte from the server, even when go-zookeeper has not noticed.
// Nothing that belonged to an
// ended session value is carried over to the next one: recipes that held
// locks under it see their leases end and clean up their nodes.
//
// Operations (Create, Get, Children, Delete, Set, Multi, ...) take a context,
// apply the client's namespace to every path, create missing parents as
// container nodes where asked, and are retried under the client's
// RetryPolicy when they fail with a retryable error (connection loss,
// operation timeout). Sequential creates and Multi are not retried: they are
// not idempotent, and the recipes handle them with Curator's protected mode.
//
// Fencing backed by ZooKeeper: GuardedMulti applies operations only while a
// guard node (a lock node) exists, and FencedResource refuses writes that
// carry a fencing token lower than one it has already seen.
package session
