// Package otelrecipes reports what the locks of zkrecipes do to
// OpenTelemetry: New returns a locktrace.Trace whose hooks record metrics
// and spans.
//
// # Attaching it
//
// Make one Trace and attach it where the events happen, once for each lock
// (a Trace attached both by an option and by an Acquire's context reports
// each event twice):
//
//	t, err := otelrecipes.New() // the global providers; or WithMeterProvider, WithTracerProvider
//	ct, err := otelrecipes.NewClientTrace() // a ZooKeeper client's connection
//	// a ZooKeeper client: its connection, and every recipe made on it
//	cli, err := session.Connect(ctx, servers, session.WithTrace(t), session.WithClientTrace(ct))
//	// a compat lock (redislock, redlock, memcachedlock, sqllock)
//	lk, err := redislock.New(rc, "jobs", redislock.WithTrace(t))
//	// or one call, and the lease it takes
//	lease, err := lk.Acquire(locktrace.WithTrace(ctx, t))
//
// The hooks do not block: they record into the SDK's instruments and
// return. Their attribute sets are computed once and kept, up to a bound.
//
// # Metrics
//
// Every lock metric has the attributes lock.backend ("zookeeper", "redis",
// "redlock", "memcached", "postgres", "mysql", "multi") and lock.kind
// ("mutex", "read", "write", "exclusive", "semaphore", "semaphore-mutex",
// "leader", "lock", "multilock"). With WithLockNames the acquisition,
// hold, held, waiting and leader metrics also carry lock.name (the path or
// key); it is off by default, as one series per lock name may be too many.
//
//   - zkrecipes.lock.acquire.duration (histogram, s; outcome, contended,
//     reentered, try): how long callers waited for a lock, and how it
//     ended (outcome "acquired", "locked", "timeout", "canceled",
//     "error"). The contended=true series is the cost of contention; a
//     rising rate of "timeout" means the lock is held longer than callers
//     are willing to wait.
//   - zkrecipes.lock.hold.duration (histogram, s; end.cause): how long
//     holdings lasted, from the acquisition to the release or loss. Long
//     holds are what waiters wait for.
//   - zkrecipes.lock.held (up-down counter, {lease}): the holdings now
//     held by this process (a re-entered holding counts once). A count
//     that never returns to zero for a lock points to a lease that is not
//     released.
//   - zkrecipes.lock.waiting (up-down counter, {acquisition}): the
//     acquisitions in progress: the queue this process has on its locks.
//   - zkrecipes.lock.losses (counter, {loss}; end.cause): holdings that
//     ended without being released (a suspended connection, a lost
//     session, a TTL that lapsed, a lock found gone, ...). Each one is a
//     holder that had to stop its work; alert on its rate.
//   - zkrecipes.lock.loss.margin (histogram, s; end.cause): for a loss,
//     how long before the server could give the lock to someone else the
//     holder was told. A negative margin means the holder was told late,
//     so two holders may have overlapped: alert on any observation below
//     zero, and on margins near zero (fencing tokens are the remedy).
//   - zkrecipes.lock.renewal.duration (histogram, s; outcome "ok" or
//     "error"): the latency of TTL lease renewals (compat backends). A
//     latency near the TTL, or errors, come before ttl_lapsed losses.
//   - zkrecipes.session.state.changes (counter, {change}; session.state
//     "Connected", "Suspended", "Reconnected", "Lost", "ReadOnly",
//     "Closed"): a ZooKeeper client's connection states. Suspended and
//     Reconnected in turn is a flapping connection; Lost is an expired
//     session, which loses every lock held on it (NewClientTrace).
//   - zkrecipes.session.connect.attempts (counter, {attempt}; outcome "ok"
//     or "error"): a ZooKeeper client's attempts to connect to a server of
//     the ensemble (NewClientTrace).
//   - zkrecipes.leader.status (gauge, {leader}: 1 or 0): whether this process leads
//     an election (1) or not (0). Summed over the processes it should be 1
//     for each election.
//
// # Spans
//
// Each Acquire or TryAcquire is a span "zkrecipes.lock.acquire", a child
// of the span in the call's context, from the call to its return. It
// carries the attributes of zkrecipes.lock.acquire.duration and, when a
// lease was taken, lock.token (its fencing token); an event "queued" when
// the lock was found held, an event "granted" and status Ok when it was
// acquired, the error and status Error when not. The holding itself is no
// span (it outlives the call; its length is zkrecipes.lock.hold.duration).
package otelrecipes

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/zkrecipes/zkrecipes/contrib/otelrecipes"

// The attribute keys.
const (
	keyBackend   = attribute.Key("lock.backend")
	keyKind      = attribute.Key("lock.kind")
	keyName      = attribute.Key("lock.name")
	keyToken     = attribute.Key("lock.token")
	keyOutcome   = attribute.Key("outcome")
	keyContended = attribute.Key("contended")
	keyReentered = attribute.Key("reentered")
	keyTry       = attribute.Key("try")
	keyCause     = attribute.Key("end.cause")
	keyState     = attribute.Key("session.state")
)

// Histogram bucket boundaries, in seconds.
var (
	// waitBuckets: acquisitions and renewals, from a millisecond to
	// minutes.
	waitBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	// holdBuckets: holdings, from a millisecond to an hour.
	holdBuckets = []float64{0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600}
	// marginBuckets: told-first margins; below zero the holder was told
	// late.
	marginBuckets = []float64{-1, -0.1, 0, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// Option configures New.
type Option func(*config)

type config struct {
	mp    metric.MeterProvider
	tp    trace.TracerProvider
	names bool
}

// WithMeterProvider records the metrics with mp instead of
// otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithTracerProvider makes the spans with tp instead of
// otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithLockNames adds the attribute lock.name (the lock's path or key) to
// the metrics of acquisitions, holdings and leadership, and to the spans.
// Off by default: each lock name makes series of its own.
func WithLockNames() Option {
	return func(c *config) { c.names = true }
}

// New returns a Trace that records the lock metrics and spans the package
// documents. Its error is that of making an instrument.
func New(opts ...Option) (*locktrace.Trace, error) {
	a, err := newAdapter(opts)
	if err != nil {
		return nil, err
	}
	return &locktrace.Trace{
		AcquireStart:  a.acquireStart,
		AcquireQueued: a.acquireQueued,
		AcquireDone:   a.acquireDone,
		LeaseEnd:      a.leaseEnd,
		Renewal:       a.renewal,
		Leadership:    a.leadership,
	}, nil
}

// NewClientTrace returns a session.ClientTrace that records a ZooKeeper
// client's metrics (zkrecipes.session.*), to give with
// session.WithClientTrace. Its error is that of making an instrument.
func NewClientTrace(opts ...Option) (*session.ClientTrace, error) {
	a, err := newAdapter(opts)
	if err != nil {
		return nil, err
	}
	return &session.ClientTrace{StateChange: a.stateChange, Connect: a.connect}, nil
}

func newAdapter(opts []Option) (*adapter, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	a := &adapter{names: c.names, tracer: c.tp.Tracer(ScopeName)}
	if err := a.instruments(c.mp.Meter(ScopeName)); err != nil {
		return nil, err
	}
	a.connectOK = metric.WithAttributeSet(attribute.NewSet(keyOutcome.String("ok")))
	a.connectErr = metric.WithAttributeSet(attribute.NewSet(keyOutcome.String("error")))
	return a, nil
}

type adapter struct {
	names  bool
	tracer trace.Tracer

	acquireDur   metric.Float64Histogram
	holdDur      metric.Float64Histogram
	held         metric.Int64UpDownCounter
	waiting      metric.Int64UpDownCounter
	losses       metric.Int64Counter
	margin       metric.Float64Histogram
	renewalDur   metric.Float64Histogram
	stateChanges metric.Int64Counter
	connects     metric.Int64Counter
	leaderStatus metric.Int64Gauge
	connectOK    metric.MeasurementOption
	connectErr   metric.MeasurementOption
	baseSets     attrCache[lockKey]
	acquireSets  attrCache[acquireKey]
	holdSets     attrCache[causeKey]
	lossSets     attrCache[causeKey]
	renewalSets  attrCache[renewalKey]
	stateSets    attrCache[string]
	spans        sync.Map // acquisition ID -> *acquisition
}

func (a *adapter) instruments(m metric.Meter) error {
	var errs [10]error
	a.acquireDur, errs[0] = m.Float64Histogram("zkrecipes.lock.acquire.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time from the start of an Acquire or TryAcquire to its return, by outcome."),
		metric.WithExplicitBucketBoundaries(waitBuckets...))
	a.holdDur, errs[1] = m.Float64Histogram("zkrecipes.lock.hold.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time a lock was held, from its acquisition to its release or loss, by end cause."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	a.held, errs[2] = m.Int64UpDownCounter("zkrecipes.lock.held",
		metric.WithUnit("{lease}"),
		metric.WithDescription("Holdings held now (a re-entered holding counts once)."))
	a.waiting, errs[3] = m.Int64UpDownCounter("zkrecipes.lock.waiting",
		metric.WithUnit("{acquisition}"),
		metric.WithDescription("Acquisitions in progress."))
	a.losses, errs[4] = m.Int64Counter("zkrecipes.lock.losses",
		metric.WithUnit("{loss}"),
		metric.WithDescription("Holdings that ended without being released, by end cause."))
	a.margin, errs[5] = m.Float64Histogram("zkrecipes.lock.loss.margin",
		metric.WithUnit("s"),
		metric.WithDescription("For a loss, how long before the server could let the lock go the holder was told; negative: told late."),
		metric.WithExplicitBucketBoundaries(marginBuckets...))
	a.renewalDur, errs[6] = m.Float64Histogram("zkrecipes.lock.renewal.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Latency of TTL lease renewals, by outcome."),
		metric.WithExplicitBucketBoundaries(waitBuckets...))
	a.stateChanges, errs[7] = m.Int64Counter("zkrecipes.session.state.changes",
		metric.WithUnit("{change}"),
		metric.WithDescription("ZooKeeper connection state changes, by new state."))
	a.connects, errs[8] = m.Int64Counter("zkrecipes.session.connect.attempts",
		metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts to connect to a ZooKeeper server, by outcome."))
	a.leaderStatus, errs[9] = m.Int64Gauge("zkrecipes.leader.status",
		metric.WithUnit("{leader}"),
		metric.WithDescription("1 while this process leads the election, 0 when not."))
	return errors.Join(errs[:]...)
}

// lockKey is a lock's attributes: its name only WithLockNames.
type lockKey struct{ backend, kind, name string }

func (a *adapter) key(id locktrace.LockID) lockKey {
	k := lockKey{backend: id.Backend, kind: id.Kind}
	if a.names {
		k.name = id.Name
	}
	return k
}

func (k lockKey) attrs(kv []attribute.KeyValue) []attribute.KeyValue {
	kv = append(kv, keyBackend.String(k.backend), keyKind.String(k.kind))
	if k.name != "" {
		kv = append(kv, keyName.String(k.name))
	}
	return kv
}

type acquireKey struct {
	lock                      lockKey
	outcome                   locktrace.Outcome
	contended, reentered, try bool
}

func (k acquireKey) attrs(kv []attribute.KeyValue) []attribute.KeyValue {
	return append(k.lock.attrs(kv), keyOutcome.String(string(k.outcome)),
		keyContended.Bool(k.contended), keyReentered.Bool(k.reentered), keyTry.Bool(k.try))
}

type causeKey struct {
	lock  lockKey
	cause locktrace.EndCause
}

type renewalKey struct {
	lock lockKey
	ok   bool
}

// attrCache keeps the attribute sets made, up to maxCached of each shape
// (beyond, with many lock names, a set is made on each use).
type attrCache[K comparable] struct {
	mu sync.RWMutex
	m  map[K]metric.MeasurementOption
}

const maxCached = 512

func (c *attrCache[K]) get(k K, mk func(K) []attribute.KeyValue) metric.MeasurementOption {
	c.mu.RLock()
	o, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return o
	}
	o = metric.WithAttributeSet(attribute.NewSet(mk(k)...))
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[K]metric.MeasurementOption)
	}
	if len(c.m) < maxCached {
		c.m[k] = o
	}
	c.mu.Unlock()
	return o
}

func (a *adapter) base(k lockKey) metric.MeasurementOption {
	return a.baseSets.get(k, func(k lockKey) []attribute.KeyValue { return k.attrs(make([]attribute.KeyValue, 0, 3)) })
}

// acquisition is a span in progress.
type acquisition struct {
	span  trace.Span
	start time.Time
}

func outcomeOf(i locktrace.AcquireDoneInfo) locktrace.Outcome {
	if i.Outcome != "" {
		return i.Outcome
	}
	return locktrace.OutcomeOf(i.Err)
}

func (a *adapter) acquireStart(i locktrace.AcquireStartInfo) {
	ctx := i.Context
	if ctx == nil {
		ctx = context.Background()
	}
	k := a.key(i.Lock)
	a.waiting.Add(ctx, 1, a.base(k))
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(append(k.attrs(make([]attribute.KeyValue, 0, 4)), keyTry.Bool(i.Try))...),
	}
	if !i.Start.IsZero() {
		opts = append(opts, trace.WithTimestamp(i.Start))
	}
	_, span := a.tracer.Start(ctx, "zkrecipes.lock.acquire", opts...)
	if !span.IsRecording() {
		return // not sampled, or no SDK: End would do nothing
	}
	a.spans.Store(i.ID, &acquisition{span: span, start: i.Start})
}

func (a *adapter) acquireQueued(i locktrace.AcquireQueuedInfo) {
	if v, ok := a.spans.Load(i.ID); ok {
		v.(*acquisition).span.AddEvent("queued")
	}
}

func (a *adapter) acquireDone(i locktrace.AcquireDoneInfo) {
	k := a.key(i.Lock)
	outcome := outcomeOf(i)
	ctx := context.Background()
	var acq *acquisition
	if v, ok := a.spans.LoadAndDelete(i.ID); ok {
		acq = v.(*acquisition)
		ctx = trace.ContextWithSpan(ctx, acq.span) // for exemplars
	}
	base := a.base(k)
	a.waiting.Add(ctx, -1, base)
	a.acquireDur.Record(ctx, i.Waited.Seconds(), a.acquireSets.get(
		acquireKey{k, outcome, i.Contended, i.Reentered, i.Try},
		func(k acquireKey) []attribute.KeyValue { return k.attrs(make([]attribute.KeyValue, 0, 7)) }))
	acquired := outcome == locktrace.OutcomeAcquired
	if acquired && !i.Reentered {
		a.held.Add(ctx, 1, base)
	}
	if acq == nil {
		return
	}
	span := acq.span
	kv := []attribute.KeyValue{
		keyOutcome.String(string(outcome)),
		keyContended.Bool(i.Contended),
		keyReentered.Bool(i.Reentered),
	}
	if i.HasToken {
		kv = append(kv, keyToken.Int64(i.Token))
	}
	span.SetAttributes(kv...)
	var end []trace.SpanEndOption
	var at []trace.EventOption
	if !acq.start.IsZero() {
		t := acq.start.Add(i.Waited)
		end = append(end, trace.WithTimestamp(t))
		at = append(at, trace.WithTimestamp(t))
	}
	if acquired {
		span.AddEvent("granted", at...)
		span.SetStatus(codes.Ok, "")
	} else {
		err := i.Err
		if err == nil {
			err = errors.New(string(outcome))
		}
		span.RecordError(err, at...)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End(end...)
}

func (a *adapter) leaseEnd(i locktrace.LeaseEndInfo) {
	ctx := context.Background()
	k := a.key(i.Lock)
	a.holdDur.Record(ctx, i.Held.Seconds(), a.holdSets.get(causeKey{k, i.Cause},
		func(k causeKey) []attribute.KeyValue {
			return append(k.lock.attrs(make([]attribute.KeyValue, 0, 4)), keyCause.String(string(k.cause)))
		}))
	a.held.Add(ctx, -1, a.base(k))
	lost := i.Cause != locktrace.EndReleased && i.Cause != locktrace.EndRevoked
	if !lost && !i.HasMargin {
		return
	}
	// Losses and margins never carry the lock's name.
	loss := a.lossSets.get(causeKey{lockKey{backend: k.backend, kind: k.kind}, i.Cause},
		func(k causeKey) []attribute.KeyValue {
			return append(k.lock.attrs(make([]attribute.KeyValue, 0, 3)), keyCause.String(string(k.cause)))
		})
	if lost {
		a.losses.Add(ctx, 1, loss)
	}
	if i.HasMargin {
		a.margin.Record(ctx, i.Margin.Seconds(), loss)
	}
}

func (a *adapter) renewal(i locktrace.RenewalInfo) {
	k := renewalKey{lockKey{backend: i.Lock.Backend, kind: i.Lock.Kind}, i.Err == nil}
	a.renewalDur.Record(context.Background(), i.Latency.Seconds(), a.renewalSets.get(k,
		func(k renewalKey) []attribute.KeyValue {
			return append(k.lock.attrs(make([]attribute.KeyValue, 0, 3)), keyOutcome.String(okOrError(k.ok)))
		}))
}

func okOrError(ok bool) string {
	if ok {
		return "ok"
	}
	return "error"
}

func (a *adapter) stateChange(i session.StateChange) {
	a.stateChanges.Add(context.Background(), 1, a.stateSets.get(i.State.String(),
		func(s string) []attribute.KeyValue { return []attribute.KeyValue{keyState.String(s)} }))
}

func (a *adapter) connect(i session.ConnectInfo) {
	o := a.connectOK
	if i.Err != nil {
		o = a.connectErr
	}
	a.connects.Add(context.Background(), 1, o)
}

func (a *adapter) leadership(i locktrace.LeadershipInfo) {
	var v int64
	if i.Leader {
		v = 1
	}
	a.leaderStatus.Record(context.Background(), v, a.base(a.key(i.Lock)))
}
