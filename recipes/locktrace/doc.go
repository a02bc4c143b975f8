// Package locktrace reports what the locks of zkrecipes do, shaped like
// net/http/httptrace: a Trace is a set of optional hooks that every lock
// of the module calls, on every backend.
//
// The hooks report acquisitions (start, found held, done, with the outcome
// and the time waited), a holding's end (held for how long, why, and for a
// loss the told-first margin: how long before the server could let the
// lock go the holder was told), TTL renewals and leadership. Attach a
// Trace per call with WithTrace, or per client or lock with
// session.WithTrace and the compat locks' WithTrace options. With none
// set, nothing is allocated.
//
// A ZooKeeper client's own connection states and attempts are not lock
// events: session.ClientTrace reports them.
//
// recipes/tracelog logs a Trace's reports through log/slog; the module
// contrib/otelrecipes makes OpenTelemetry metrics and spans of them.
// docs/metrics.md lists every report, metric and span.
package locktrace
