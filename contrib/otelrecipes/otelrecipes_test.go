package otelrecipes_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/contrib/otelrecipes"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	zkMutex = locktrace.LockID{Backend: "zookeeper", Kind: "mutex", Name: "/locks/jobs"}
	redis   = locktrace.LockID{Backend: "redis", Kind: "lock", Name: "jobs"}
)

// fixture is a Trace from New on SDK providers the test reads.
type fixture struct {
	trace  *locktrace.Trace
	client *session.ClientTrace
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newFixture(t *testing.T, opts ...otelrecipes.Option) *fixture {
	t.Helper()
	f := &fixture{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader))
	f.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans))
	t.Cleanup(func() {
		assert.NoError(t, mp.Shutdown(context.Background()))
		assert.NoError(t, f.tp.Shutdown(context.Background()))
	})
	var err error
	f.trace, err = otelrecipes.New(append([]otelrecipes.Option{
		otelrecipes.WithMeterProvider(mp), otelrecipes.WithTracerProvider(f.tp)}, opts...)...)
	require.NoError(t, err)
	f.client, err = otelrecipes.NewClientTrace(otelrecipes.WithMeterProvider(mp))
	require.NoError(t, err)
	return f
}

// metrics collects the metrics, by name.
func (f *fixture) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, f.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, otelrecipes.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// get returns the metric name, checking its unit and description.
func get(t *testing.T, ms map[string]metricdata.Metrics, name, unit string) metricdata.Metrics {
	t.Helper()
	m, ok := ms[name]
	require.True(t, ok, "no metric %s", name)
	require.Equal(t, unit, m.Unit, name)
	require.NotEmpty(t, m.Description, name)
	return m
}

func set(kv ...attribute.KeyValue) attribute.Set { return attribute.NewSet(kv...) }

func lockAttrs(id locktrace.LockID, more ...attribute.KeyValue) attribute.Set {
	return set(append([]attribute.KeyValue{
		attribute.String("lock.backend", id.Backend), attribute.String("lock.kind", id.Kind)}, more...)...)
}

func acquireAttrs(id locktrace.LockID, outcome locktrace.Outcome, contended, reentered, try bool, more ...attribute.KeyValue) attribute.Set {
	return lockAttrs(id, append([]attribute.KeyValue{
		attribute.String("outcome", string(outcome)), attribute.Bool("contended", contended),
		attribute.Bool("reentered", reentered), attribute.Bool("try", try)}, more...)...)
}

func histogram(t *testing.T, m metricdata.Metrics, attrs attribute.Set) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s: %T", m.Name, m.Data)
	require.Equal(t, metricdata.CumulativeTemporality, h.Temporality)
	for _, dp := range h.DataPoints {
		if dp.Attributes.Equals(&attrs) {
			return dp
		}
	}
	var have []string
	for _, dp := range h.DataPoints {
		have = append(have, enc(dp.Attributes))
	}
	require.Failf(t, "no data point", "%s{%s} in %q", m.Name, enc(attrs), have)
	return metricdata.HistogramDataPoint[float64]{}
}

// sum returns the value of a counter or up-down counter's data point.
func sum(t *testing.T, m metricdata.Metrics, monotonic bool, attrs attribute.Set) int64 {
	t.Helper()
	s, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s: %T", m.Name, m.Data)
	require.Equal(t, monotonic, s.IsMonotonic, m.Name)
	for _, dp := range s.DataPoints {
		if dp.Attributes.Equals(&attrs) {
			return dp.Value
		}
	}
	var have []string
	for _, dp := range s.DataPoints {
		have = append(have, enc(dp.Attributes))
	}
	require.Failf(t, "no data point", "%s{%s} in %q", m.Name, enc(attrs), have)
	return 0
}

func points(t *testing.T, m metricdata.Metrics) int {
	t.Helper()
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		return len(d.DataPoints)
	case metricdata.Histogram[float64]:
		return len(d.DataPoints)
	case metricdata.Gauge[int64]:
		return len(d.DataPoints)
	}
	t.Fatalf("%s: %T", m.Name, m.Data)
	return 0
}

func enc(a attribute.Set) string { return a.Encoded(attribute.DefaultEncoder()) }

func TestContendedAcquisitionAndRelease(t *testing.T) {
	f := newFixture(t)
	start := time.Now()
	f.trace.AcquireStart(locktrace.AcquireStartInfo{ID: 1, Lock: zkMutex, Start: start, Context: context.Background()})
	ms := f.metrics(t)
	assert.EqualValues(t, 1, sum(t, get(t, ms, "zkrecipes.lock.waiting", "{acquisition}"), false, lockAttrs(zkMutex)))
	f.trace.AcquireQueued(locktrace.AcquireQueuedInfo{ID: 1, Lock: zkMutex})
	f.trace.AcquireDone(locktrace.AcquireDoneInfo{ID: 1, Lock: zkMutex, Outcome: locktrace.OutcomeAcquired,
		Waited: 250 * time.Millisecond, Contended: true, Token: 7, HasToken: true})

	ms = f.metrics(t)
	dp := histogram(t, get(t, ms, "zkrecipes.lock.acquire.duration", "s"),
		acquireAttrs(zkMutex, locktrace.OutcomeAcquired, true, false, false))
	assert.EqualValues(t, 1, dp.Count)
	assert.InDelta(t, 0.25, dp.Sum, 1e-9)
	assert.Contains(t, dp.Bounds, 0.25, "buckets in seconds")
	assert.EqualValues(t, 0, sum(t, get(t, ms, "zkrecipes.lock.waiting", "{acquisition}"), false, lockAttrs(zkMutex)))
	assert.EqualValues(t, 1, sum(t, get(t, ms, "zkrecipes.lock.held", "{lease}"), false, lockAttrs(zkMutex)))
	_, hold := ms["zkrecipes.lock.hold.duration"]
	assert.False(t, hold, "no holding ended yet")

	f.trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Held: 2 * time.Second, Cause: locktrace.EndReleased,
		Err: recipes.ErrReleased, Token: 7, HasToken: true})
	ms = f.metrics(t)
	assert.EqualValues(t, 0, sum(t, get(t, ms, "zkrecipes.lock.held", "{lease}"), false, lockAttrs(zkMutex)))
	dp = histogram(t, get(t, ms, "zkrecipes.lock.hold.duration", "s"),
		lockAttrs(zkMutex, attribute.String("end.cause", "released")))
	assert.EqualValues(t, 1, dp.Count)
	assert.InDelta(t, 2.0, dp.Sum, 1e-9)
	for _, name := range []string{"zkrecipes.lock.losses", "zkrecipes.lock.loss.margin"} {
		_, ok := ms[name]
		assert.False(t, ok, "%s after a release", name)
	}
}

// A refused TryAcquire and a re-entered acquisition are not holdings of
// their own: the held count does not move.
func TestRefusedAndReentered(t *testing.T) {
	f := newFixture(t)
	f.trace.AcquireStart(locktrace.AcquireStartInfo{ID: 1, Lock: redis, Try: true, Start: time.Now(), Context: context.Background()})
	f.trace.AcquireQueued(locktrace.AcquireQueuedInfo{ID: 1, Lock: redis, Try: true})
	f.trace.AcquireDone(locktrace.AcquireDoneInfo{ID: 1, Lock: redis, Try: true, Outcome: locktrace.OutcomeLocked,
		Err: recipes.ErrLocked, Waited: 3 * time.Millisecond, Contended: true})
	f.trace.AcquireStart(locktrace.AcquireStartInfo{ID: 2, Lock: redis, Start: time.Now(), Context: context.Background()})
	f.trace.AcquireDone(locktrace.AcquireDoneInfo{ID: 2, Lock: redis, Outcome: locktrace.OutcomeAcquired,
		Waited: time.Millisecond, Reentered: true})
	// No Outcome: classified from Err.
	f.trace.AcquireStart(locktrace.AcquireStartInfo{ID: 3, Lock: redis, Start: time.Now(), Context: context.Background()})
	f.trace.AcquireDone(locktrace.AcquireDoneInfo{ID: 3, Lock: redis, Err: context.DeadlineExceeded, Waited: time.Second})

	ms := f.metrics(t)
	acq := get(t, ms, "zkrecipes.lock.acquire.duration", "s")
	assert.Equal(t, 3, points(t, acq))
	dp := histogram(t, acq, acquireAttrs(redis, locktrace.OutcomeLocked, true, false, true))
	assert.InDelta(t, 0.003, dp.Sum, 1e-9)
	dp = histogram(t, acq, acquireAttrs(redis, locktrace.OutcomeAcquired, false, true, false))
	assert.EqualValues(t, 1, dp.Count)
	dp = histogram(t, acq, acquireAttrs(redis, locktrace.OutcomeTimeout, false, false, false))
	assert.InDelta(t, 1.0, dp.Sum, 1e-9)
	_, held := ms["zkrecipes.lock.held"]
	assert.False(t, held, "nothing taken")
	assert.EqualValues(t, 0, sum(t, get(t, ms, "zkrecipes.lock.waiting", "{acquisition}"), false, lockAttrs(redis)))
}

func TestLossesAndMargins(t *testing.T) {
	f := newFixture(t, otelrecipes.WithLockNames())
	take := func(id uint64, lock locktrace.LockID) {
		f.trace.AcquireStart(locktrace.AcquireStartInfo{ID: id, Lock: lock, Start: time.Now(), Context: context.Background()})
		f.trace.AcquireDone(locktrace.AcquireDoneInfo{ID: id, Lock: lock, Outcome: locktrace.OutcomeAcquired})
	}
	for id := uint64(1); id <= 5; id++ {
		take(id, zkMutex)
	}
	take(6, redis)
	// A session lost, told 50ms late; another told 300ms ahead; a
	// suspension with no margin; a revocation and a release, no loss.
	f.trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Held: time.Second, Cause: locktrace.EndSessionLost,
		Margin: -50 * time.Millisecond, HasMargin: true})
	f.trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Held: time.Second, Cause: locktrace.EndSessionLost,
		Margin: 300 * time.Millisecond, HasMargin: true})
	f.trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Held: time.Second, Cause: locktrace.EndSuspended})
	f.trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Held: time.Second, Cause: locktrace.EndRevoked})
	f.trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Held: time.Second, Cause: locktrace.EndReleased})
	f.trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: redis, Held: 10 * time.Second, Cause: locktrace.EndTTLLapsed,
		Margin: 400 * time.Millisecond, HasMargin: true})

	ms := f.metrics(t)
	cause := func(c locktrace.EndCause) attribute.KeyValue { return attribute.String("end.cause", string(c)) }
	losses := get(t, ms, "zkrecipes.lock.losses", "{loss}")
	assert.Equal(t, 3, points(t, losses), "released and revoked are no losses")
	// No lock.name on losses, even WithLockNames.
	assert.EqualValues(t, 2, sum(t, losses, true, lockAttrs(zkMutex, cause(locktrace.EndSessionLost))))
	assert.EqualValues(t, 1, sum(t, losses, true, lockAttrs(zkMutex, cause(locktrace.EndSuspended))))
	assert.EqualValues(t, 1, sum(t, losses, true, lockAttrs(redis, cause(locktrace.EndTTLLapsed))))

	margin := get(t, ms, "zkrecipes.lock.loss.margin", "s")
	assert.Equal(t, 2, points(t, margin), "recorded only with HasMargin")
	dp := histogram(t, margin, lockAttrs(zkMutex, cause(locktrace.EndSessionLost)))
	assert.Equal(t, []float64{-1, -0.1, 0, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}, dp.Bounds)
	assert.EqualValues(t, 2, dp.Count)
	assert.InDelta(t, 0.25, dp.Sum, 1e-9)
	assert.EqualValues(t, 1, dp.BucketCounts[2], "-50ms in (-0.1, 0]: told late")
	assert.EqualValues(t, 1, dp.BucketCounts[7], "300ms in (0.25, 0.5]")
	minimum, ok := dp.Min.Value()
	require.True(t, ok)
	assert.InDelta(t, -0.05, minimum, 1e-9)
	dp = histogram(t, margin, lockAttrs(redis, cause(locktrace.EndTTLLapsed)))
	assert.InDelta(t, 0.4, dp.Sum, 1e-9)

	named := func(id locktrace.LockID, more ...attribute.KeyValue) attribute.Set {
		return lockAttrs(id, append(more, attribute.String("lock.name", id.Name))...)
	}
	held := get(t, ms, "zkrecipes.lock.held", "{lease}")
	assert.EqualValues(t, 0, sum(t, held, false, named(zkMutex)))
	assert.EqualValues(t, 0, sum(t, held, false, named(redis)))
	hold := get(t, ms, "zkrecipes.lock.hold.duration", "s")
	assert.Equal(t, 5, points(t, hold))
	assert.EqualValues(t, 2, histogram(t, hold, named(zkMutex, cause(locktrace.EndSessionLost))).Count)
	assert.InDelta(t, 10.0, histogram(t, hold, named(redis, cause(locktrace.EndTTLLapsed))).Sum, 1e-9)
}

// lock.name is on the acquisition, holding and leadership metrics only
// WithLockNames.
func TestLockNames(t *testing.T) {
	for _, names := range []bool{false, true} {
		var opts []otelrecipes.Option
		if names {
			opts = append(opts, otelrecipes.WithLockNames())
		}
		f := newFixture(t, opts...)
		f.trace.AcquireStart(locktrace.AcquireStartInfo{ID: 1, Lock: zkMutex, Start: time.Now(), Context: context.Background()})
		f.trace.AcquireDone(locktrace.AcquireDoneInfo{ID: 1, Lock: zkMutex, Outcome: locktrace.OutcomeAcquired, Waited: time.Millisecond})
		f.trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Cause: locktrace.EndReleased, Held: time.Millisecond})
		f.trace.Leadership(locktrace.LeadershipInfo{Lock: locktrace.LockID{Backend: "zookeeper", Kind: "leader", Name: "/election"}, Leader: true})
		ms := f.metrics(t)
		for _, name := range []string{"zkrecipes.lock.acquire.duration", "zkrecipes.lock.hold.duration",
			"zkrecipes.lock.held", "zkrecipes.lock.waiting", "zkrecipes.leader.status"} {
			for _, a := range attrSets(t, ms[name]) {
				v, ok := a.Value("lock.name")
				assert.Equal(t, names, ok, "%s, names %v", name, names)
				if ok {
					assert.Contains(t, []string{"/locks/jobs", "/election"}, v.AsString())
				}
			}
		}
		spans := f.spans.Ended()
		require.Len(t, spans, 1)
		_, ok := attrsOf(spans[0].Attributes())["lock.name"]
		assert.Equal(t, names, ok, "span, names %v", names)
	}
}

func attrSets(t *testing.T, m metricdata.Metrics) []attribute.Set {
	t.Helper()
	var out []attribute.Set
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Gauge[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	default:
		t.Fatalf("%s: %T", m.Name, m.Data)
	}
	require.NotEmpty(t, out, m.Name)
	return out
}

func TestRenewalsSessionsAndLeadership(t *testing.T) {
	f := newFixture(t, otelrecipes.WithLockNames())
	f.trace.Renewal(locktrace.RenewalInfo{Lock: redis, Latency: 20 * time.Millisecond})
	f.trace.Renewal(locktrace.RenewalInfo{Lock: redis, Latency: 30 * time.Millisecond})
	f.trace.Renewal(locktrace.RenewalInfo{Lock: redis, Latency: 2 * time.Second, Err: errors.New("i/o timeout")})
	for _, s := range []session.State{session.Connected, session.Suspended, session.Reconnected, session.Suspended, session.Lost} {
		f.client.StateChange(session.StateChange{State: s, SessionID: 42})
	}
	f.client.Connect(session.ConnectInfo{Server: "zk1:2181", Latency: time.Second, Err: errors.New("refused")})
	f.client.Connect(session.ConnectInfo{Server: "zk2:2181", Latency: time.Millisecond})
	f.client.Connect(session.ConnectInfo{Server: "zk3:2181", Latency: time.Millisecond})
	elect := locktrace.LockID{Backend: "zookeeper", Kind: "leader", Name: "/election"}
	f.trace.Leadership(locktrace.LeadershipInfo{Lock: elect, Leader: true})

	ms := f.metrics(t)
	ren := get(t, ms, "zkrecipes.lock.renewal.duration", "s")
	dp := histogram(t, ren, lockAttrs(redis, attribute.String("outcome", "ok")))
	assert.EqualValues(t, 2, dp.Count)
	assert.InDelta(t, 0.05, dp.Sum, 1e-9)
	dp = histogram(t, ren, lockAttrs(redis, attribute.String("outcome", "error")))
	assert.InDelta(t, 2.0, dp.Sum, 1e-9)

	states := get(t, ms, "zkrecipes.session.state.changes", "{change}")
	assert.Equal(t, 4, points(t, states))
	state := func(s string) attribute.Set { return set(attribute.String("session.state", s)) }
	assert.EqualValues(t, 2, sum(t, states, true, state("Suspended")))
	assert.EqualValues(t, 1, sum(t, states, true, state("Lost")))

	conn := get(t, ms, "zkrecipes.session.connect.attempts", "{attempt}")
	assert.EqualValues(t, 2, sum(t, conn, true, set(attribute.String("outcome", "ok"))))
	assert.EqualValues(t, 1, sum(t, conn, true, set(attribute.String("outcome", "error"))))

	leader := func() int64 {
		m := get(t, f.metrics(t), "zkrecipes.leader.status", "{leader}")
		g, ok := m.Data.(metricdata.Gauge[int64])
		require.True(t, ok, "%T", m.Data)
		require.Len(t, g.DataPoints, 1)
		want := lockAttrs(elect, attribute.String("lock.name", "/election"))
		require.True(t, g.DataPoints[0].Attributes.Equals(&want))
		return g.DataPoints[0].Value
	}
	assert.EqualValues(t, 1, leader())
	f.trace.Leadership(locktrace.LeadershipInfo{Lock: elect, Leader: false, Err: recipes.ErrReleased})
	assert.EqualValues(t, 0, leader())
}

func attrsOf(kv []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, a := range kv {
		m[a.Key] = a.Value
	}
	return m
}

func eventNames(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		out = append(out, e.Name)
	}
	return out
}

// One span per acquisition, a child of the caller's, and none over the
// holding.
func TestSpans(t *testing.T) {
	f := newFixture(t)
	ctx, parent := f.tp.Tracer("test").Start(context.Background(), "handle job")
	start := time.Now().Add(-time.Second)
	f.trace.AcquireStart(locktrace.AcquireStartInfo{ID: 10, Lock: zkMutex, Start: start, Context: ctx})
	f.trace.AcquireQueued(locktrace.AcquireQueuedInfo{ID: 10, Lock: zkMutex})
	f.trace.AcquireDone(locktrace.AcquireDoneInfo{ID: 10, Lock: zkMutex, Outcome: locktrace.OutcomeAcquired,
		Waited: 250 * time.Millisecond, Contended: true, Token: 7, HasToken: true})
	f.trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Held: time.Second, Cause: locktrace.EndReleased})
	f.trace.AcquireStart(locktrace.AcquireStartInfo{ID: 11, Lock: zkMutex, Start: start, Context: ctx})
	f.trace.AcquireDone(locktrace.AcquireDoneInfo{ID: 11, Lock: zkMutex, Outcome: locktrace.OutcomeTimeout,
		Err: context.DeadlineExceeded, Waited: 100 * time.Millisecond})
	parent.End()

	require.Len(t, f.spans.Started(), 3, "the parent and one span per acquisition")
	ended := f.spans.Ended()
	require.Len(t, ended, 3)
	var acq []sdktrace.ReadOnlySpan
	for _, s := range ended {
		if s.Name() == "zkrecipes.lock.acquire" {
			acq = append(acq, s)
		}
	}
	require.Len(t, acq, 2)
	for _, s := range acq {
		assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID())
		assert.Equal(t, parent.SpanContext().TraceID(), s.SpanContext().TraceID())
		assert.Equal(t, otelrecipes.ScopeName, s.InstrumentationScope().Name)
		assert.True(t, s.StartTime().Equal(start))
	}

	ok := acq[0]
	assert.Equal(t, []string{"queued", "granted"}, eventNames(ok))
	assert.Equal(t, codes.Ok, ok.Status().Code)
	assert.Equal(t, 250*time.Millisecond, ok.EndTime().Sub(ok.StartTime()))
	a := attrsOf(ok.Attributes())
	assert.Equal(t, "zookeeper", a["lock.backend"].AsString())
	assert.Equal(t, "mutex", a["lock.kind"].AsString())
	assert.Equal(t, "acquired", a["outcome"].AsString())
	assert.True(t, a["contended"].AsBool())
	assert.False(t, a["reentered"].AsBool())
	assert.False(t, a["try"].AsBool())
	assert.EqualValues(t, 7, a["lock.token"].AsInt64())
	_, named := a["lock.name"]
	assert.False(t, named)

	timedOut := acq[1]
	assert.Equal(t, []string{"exception"}, eventNames(timedOut))
	assert.Equal(t, codes.Error, timedOut.Status().Code)
	assert.Equal(t, context.DeadlineExceeded.Error(), timedOut.Status().Description)
	a = attrsOf(timedOut.Attributes())
	assert.Equal(t, "timeout", a["outcome"].AsString())
	_, token := a["lock.token"]
	assert.False(t, token)
}

// A Trace on the global providers (no SDK) and hooks given no context
// record nothing and do not fail.
func TestDefaultProviders(t *testing.T) {
	tr, err := otelrecipes.New()
	require.NoError(t, err)
	require.NotNil(t, tr.AcquireStart)
	require.NotNil(t, tr.AcquireQueued)
	require.NotNil(t, tr.AcquireDone)
	require.NotNil(t, tr.LeaseEnd)
	require.NotNil(t, tr.Renewal)
	require.NotNil(t, tr.Leadership)
	ct, err := otelrecipes.NewClientTrace()
	require.NoError(t, err)
	require.NotNil(t, ct.StateChange)
	require.NotNil(t, ct.Connect)
	ct.StateChange(session.StateChange{State: session.Lost})
	ct.Connect(session.ConnectInfo{Server: "zk1:2181"})
	tr.AcquireStart(locktrace.AcquireStartInfo{ID: 1, Lock: zkMutex})
	tr.AcquireQueued(locktrace.AcquireQueuedInfo{ID: 1, Lock: zkMutex})
	tr.AcquireDone(locktrace.AcquireDoneInfo{ID: 1, Lock: zkMutex, Outcome: locktrace.OutcomeAcquired})
	tr.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Cause: locktrace.EndGone, HasMargin: true})
	// With an SDK, no Context either.
	f := newFixture(t)
	f.trace.AcquireStart(locktrace.AcquireStartInfo{ID: 1, Lock: zkMutex})
	f.trace.AcquireDone(locktrace.AcquireDoneInfo{ID: 1, Lock: zkMutex, Outcome: locktrace.OutcomeError, Err: errors.New("boom")})
	require.Len(t, f.spans.Ended(), 1)
	assert.False(t, f.spans.Ended()[0].Parent().SpanID().IsValid(), "no parent")
}

// Scraped over HTTP, the example's handler shows the acquisition's
// buckets with their labels.
func TestPrometheusScrape(t *testing.T) {
	handler, tr, mp, err := prometheusMetrics()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, mp.Shutdown(context.Background())) })
	tr.AcquireStart(locktrace.AcquireStartInfo{ID: 1, Lock: zkMutex, Start: time.Now(), Context: context.Background()})
	tr.AcquireQueued(locktrace.AcquireQueuedInfo{ID: 1, Lock: zkMutex})
	tr.AcquireDone(locktrace.AcquireDoneInfo{ID: 1, Lock: zkMutex, Outcome: locktrace.OutcomeAcquired,
		Waited: 250 * time.Millisecond, Contended: true})
	tr.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Held: time.Second, Cause: locktrace.EndSessionLost,
		Margin: -20 * time.Millisecond, HasMargin: true})
	ct, err := otelrecipes.NewClientTrace(otelrecipes.WithMeterProvider(mp))
	require.NoError(t, err)
	ct.StateChange(session.StateChange{State: session.Lost})
	ct.Connect(session.ConnectInfo{Server: "zk1:2181"})

	srv := httptest.NewServer(handler)
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	text := string(body)
	for _, want := range []string{
		`zkrecipes_lock_acquire_duration_seconds_bucket{contended="true",lock_backend="zookeeper",lock_kind="mutex",outcome="acquired",reentered="false",try="false",le="0.1"} 0`,
		`zkrecipes_lock_acquire_duration_seconds_bucket{contended="true",lock_backend="zookeeper",lock_kind="mutex",outcome="acquired",reentered="false",try="false",le="0.25"} 1`,
		`zkrecipes_lock_held{lock_backend="zookeeper",lock_kind="mutex"} 0`,
		`zkrecipes_lock_waiting{lock_backend="zookeeper",lock_kind="mutex"} 0`,
		`zkrecipes_lock_losses_total{end_cause="session_lost",lock_backend="zookeeper",lock_kind="mutex"} 1`,
		`zkrecipes_lock_loss_margin_seconds_bucket{end_cause="session_lost",lock_backend="zookeeper",lock_kind="mutex",le="0"} 1`,
		`zkrecipes_lock_hold_duration_seconds_count{end_cause="session_lost",lock_backend="zookeeper",lock_kind="mutex"} 1`,
		`zkrecipes_session_state_changes_total{session_state="Lost"} 1`,
		`zkrecipes_session_connect_attempts_total{outcome="ok"} 1`,
	} {
		assert.Contains(t, text, want)
	}
	if t.Failed() {
		t.Log(text)
	}
	assert.False(t, strings.Contains(text, "lock_name"))
}

// The hooks may be called from several goroutines at once (run with
// -race).
func TestConcurrentHooks(t *testing.T) {
	f := newFixture(t, otelrecipes.WithLockNames())
	const workers, rounds = 8, 200
	locks := []locktrace.LockID{zkMutex, redis, {Backend: "postgres", Kind: "lock", Name: "jobs"}}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				id := uint64(w*rounds + r + 1)
				lock := locks[(w+r)%len(locks)]
				f.trace.AcquireStart(locktrace.AcquireStartInfo{ID: id, Lock: lock, Start: time.Now(), Context: context.Background()})
				f.trace.AcquireQueued(locktrace.AcquireQueuedInfo{ID: id, Lock: lock})
				f.trace.AcquireDone(locktrace.AcquireDoneInfo{ID: id, Lock: lock, Outcome: locktrace.OutcomeAcquired,
					Waited: time.Millisecond, Contended: true, Token: int64(id), HasToken: true})
				f.trace.Renewal(locktrace.RenewalInfo{Lock: lock, Latency: time.Millisecond})
				f.trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: lock, Held: time.Millisecond, Cause: locktrace.EndTTLLapsed,
					Margin: time.Millisecond, HasMargin: true})
				f.client.StateChange(session.StateChange{State: session.Reconnected})
				f.client.Connect(session.ConnectInfo{Server: "zk:2181"})
				f.trace.Leadership(locktrace.LeadershipInfo{Lock: lock, Leader: r%2 == 0})
			}
		})
	}
	wg.Wait()
	ms := f.metrics(t)
	var acquired, losses uint64
	h := get(t, ms, "zkrecipes.lock.acquire.duration", "s").Data.(metricdata.Histogram[float64])
	for _, dp := range h.DataPoints {
		acquired += dp.Count
	}
	assert.EqualValues(t, workers*rounds, acquired)
	for _, lock := range locks {
		named := lockAttrs(lock, attribute.String("lock.name", lock.Name))
		assert.EqualValues(t, 0, sum(t, get(t, ms, "zkrecipes.lock.held", "{lease}"), false, named))
		assert.EqualValues(t, 0, sum(t, get(t, ms, "zkrecipes.lock.waiting", "{acquisition}"), false, named))
		losses += uint64(sum(t, get(t, ms, "zkrecipes.lock.losses", "{loss}"), true,
			lockAttrs(lock, attribute.String("end.cause", "ttl_lapsed"))))
	}
	assert.EqualValues(t, workers*rounds, losses)
	assert.EqualValues(t, workers*rounds, sum(t, get(t, ms, "zkrecipes.session.state.changes", "{change}"), true,
		set(attribute.String("session.state", "Reconnected"))))
	assert.Len(t, f.spans.Ended(), workers*rounds)
}
