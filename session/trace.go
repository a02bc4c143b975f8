package session

import "time"

// ClientTrace is a ZooKeeper client's own hooks, beside the locks' (a
// locktrace.Trace given by WithTrace): its connection states and its
// attempts to connect to a server. Each field is optional. Give one with
// WithClientTrace.
//
// The hooks are called synchronously on the client's goroutines,
// StateChange under the client's state lock and in order: a hook must not
// block and must not call the client.
type ClientTrace struct {
	// StateChange: the client's connection state changed (as Subscribe
	// would deliver it, but at once and never dropped).
	StateChange func(StateChange)
	// Connect: an attempt to connect to one server ended, with or without
	// a connection.
	Connect func(ConnectInfo)
}

// ConnectInfo is ClientTrace.Connect's report.
type ConnectInfo struct {
	// Server is the address tried.
	Server string
	// Latency is how long the attempt took.
	Latency time.Duration
	// Err is nil when the server answered the session handshake.
	Err error
}

// WithClientTrace reports the client's connection states and connection
// attempts to t (see ClientTrace). A later WithClientTrace replaces an
// earlier one.
func WithClientTrace(t *ClientTrace) Option {
	return func(c *config) error {
		c.clientTrace = t
		return nil
	}
}
