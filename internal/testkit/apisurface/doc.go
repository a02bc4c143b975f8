// Package apisurface holds a test of the module's public API: no exported
// name of a shipped package (any package of the module but internal ones
// and commands) mentions a type of github.com/go-zookeeper/zk in its
// signature. The client's own types (session.Stat, session.Event,
// session.ACL, session.CreateMode, session.OpResult) stand for them; the
// conversion happens at session's edge only, so that go-zookeeper can be
// replaced without breaking a user.
package apisurface
