// Package tracetest records what a locktrace.Trace is told, for tests: a
// Recorder's Trace appends every report under a mutex, and its methods
// wait (bounded) for the reports a test expects.
package tracetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
)

// Recorder keeps every report of its Trace.
type Recorder struct {
	mu       sync.Mutex
	changed  chan struct{}
	starts   []locktrace.AcquireStartInfo
	queued   []locktrace.AcquireQueuedInfo
	dones    []locktrace.AcquireDoneInfo
	ends     []locktrace.LeaseEndInfo
	renewals []locktrace.RenewalInfo
	states   []session.StateChange
	connects []session.ConnectInfo
	leaders  []locktrace.LeadershipInfo
}

// New returns an empty Recorder.
func New() *Recorder { return &Recorder{changed: make(chan struct{})} }

// Trace returns a Trace whose every hook records into r.
func (r *Recorder) Trace() *locktrace.Trace {
	return &locktrace.Trace{
		AcquireStart:  func(i locktrace.AcquireStartInfo) { add(r, &r.starts, i) },
		AcquireQueued: func(i locktrace.AcquireQueuedInfo) { add(r, &r.queued, i) },
		AcquireDone:   func(i locktrace.AcquireDoneInfo) { add(r, &r.dones, i) },
		LeaseEnd:      func(i locktrace.LeaseEndInfo) { add(r, &r.ends, i) },
		Renewal:       func(i locktrace.RenewalInfo) { add(r, &r.renewals, i) },
		Leadership:    func(i locktrace.LeadershipInfo) { add(r, &r.leaders, i) },
	}
}

// ClientTrace returns a session.ClientTrace whose hooks record into r.
func (r *Recorder) ClientTrace() *session.ClientTrace {
	return &session.ClientTrace{
		StateChange: func(i session.StateChange) { add(r, &r.states, i) },
		Connect:     func(i session.ConnectInfo) { add(r, &r.connects, i) },
	}
}

// SessionOptions attach both r's Trace and its ClientTrace to a client.
func (r *Recorder) SessionOptions() []session.Option {
	return []session.Option{session.WithTrace(r.Trace()), session.WithClientTrace(r.ClientTrace())}
}

func add[I any](r *Recorder, to *[]I, i I) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*to = append(*to, i)
	close(r.changed)
	r.changed = make(chan struct{})
}

func get[I any](r *Recorder, from *[]I) []I {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(*from)
}

// Starts returns the AcquireStart reports so far.
func (r *Recorder) Starts() []locktrace.AcquireStartInfo { return get(r, &r.starts) }

// Queued returns the AcquireQueued reports so far.
func (r *Recorder) Queued() []locktrace.AcquireQueuedInfo { return get(r, &r.queued) }

// Dones returns the AcquireDone reports so far.
func (r *Recorder) Dones() []locktrace.AcquireDoneInfo { return get(r, &r.dones) }

// Ends returns the LeaseEnd reports so far.
func (r *Recorder) Ends() []locktrace.LeaseEndInfo { return get(r, &r.ends) }

// Renewals returns the Renewal reports so far.
func (r *Recorder) Renewals() []locktrace.RenewalInfo { return get(r, &r.renewals) }

// States returns the StateChange reports so far.
func (r *Recorder) States() []session.StateChange { return get(r, &r.states) }

// Connects returns the Connect reports so far.
func (r *Recorder) Connects() []session.ConnectInfo { return get(r, &r.connects) }

// Leaderships returns the Leadership reports so far.
func (r *Recorder) Leaderships() []locktrace.LeadershipInfo { return get(r, &r.leaders) }

// WaitTimeout bounds every wait of a Recorder: reports come within a
// session timeout or a TTL of the tests, far less than this.
const WaitTimeout = time.Minute

// Await waits until ok holds of r, or fails t after WaitTimeout.
func (r *Recorder) Await(t testing.TB, what string, ok func(r *Recorder) bool) {
	t.Helper()
	deadline := time.After(WaitTimeout)
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		if ok(r) {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("tracetest: no %s within %v", what, WaitTimeout)
		}
	}
}

// AwaitEnd waits for the n-th LeaseEnd report (1-based) and returns it.
func (r *Recorder) AwaitEnd(t testing.TB, n int) locktrace.LeaseEndInfo {
	t.Helper()
	r.Await(t, "lease end", func(r *Recorder) bool { return len(r.Ends()) >= n })
	return r.Ends()[n-1]
}

// AwaitDone waits for the n-th AcquireDone report (1-based) and returns it.
func (r *Recorder) AwaitDone(t testing.TB, n int) locktrace.AcquireDoneInfo {
	t.Helper()
	r.Await(t, "acquisition", func(r *Recorder) bool { return len(r.Dones()) >= n })
	return r.Dones()[n-1]
}
