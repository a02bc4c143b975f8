package tracelog_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/recipes/tracelog"
)

// logTo returns a Trace logging at level and up to a buffer, as text
// records without their time, and a function returning the lines logged
// since it was last called.
func logTo(t *testing.T, level slog.Level, opts ...tracelog.Option) (*locktrace.Trace, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var buf bytes.Buffer
	h := slog.NewTextHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	})
	lines := func() []string {
		mu.Lock()
		defer mu.Unlock()
		s := strings.TrimSpace(buf.String())
		buf.Reset()
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	return tracelog.New(slog.New(h), opts...), lines
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

var (
	zkMutex   = locktrace.LockID{Backend: "zookeeper", Kind: "mutex", Name: "/jobs/x"}
	redisLock = locktrace.LockID{Backend: "redis", Kind: "lock", Name: "jobs"}
)

const zkAttrs = "lock.backend=zookeeper lock.kind=mutex lock.name=/jobs/x"

func expect(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAcquireDone(t *testing.T) {
	trace, lines := logTo(t, slog.LevelInfo, tracelog.WithSlowAcquire(time.Second))
	done := func(o locktrace.Outcome, waited time.Duration, err error) locktrace.AcquireDoneInfo {
		return locktrace.AcquireDoneInfo{ID: 1, Lock: zkMutex, Outcome: o, Err: err, Waited: waited, Contended: waited > 0}
	}

	trace.AcquireDone(done(locktrace.OutcomeAcquired, 999*time.Millisecond, nil))
	expect(t, lines()) // not slow: Debug

	info := done(locktrace.OutcomeAcquired, time.Second, nil)
	info.Token, info.HasToken = 9, true
	trace.AcquireDone(info)
	expect(t, lines(), `level=WARN msg="slow lock acquisition" `+zkAttrs+` outcome=acquired waited=1s contended=true token=9`)

	trace.AcquireDone(done(locktrace.OutcomeTimeout, 5*time.Second, context.DeadlineExceeded))
	expect(t, lines(), `level=WARN msg="slow lock acquisition" `+zkAttrs+` outcome=timeout waited=5s contended=true`)

	info = done(locktrace.OutcomeLocked, 0, recipes.ErrLocked)
	info.Try, info.Contended = true, true
	trace.AcquireDone(info)
	expect(t, lines()) // a refused TryAcquire: Debug

	trace.AcquireDone(done(locktrace.OutcomeError, 0, errors.New("connection refused")))
	expect(t, lines(), `level=WARN msg="lock acquisition failed" `+zkAttrs+` outcome=error waited=0s contended=false err="connection refused"`)
}

func TestSlowAcquireOff(t *testing.T) {
	trace, lines := logTo(t, slog.LevelInfo, tracelog.WithSlowAcquire(0))
	trace.AcquireDone(locktrace.AcquireDoneInfo{Lock: zkMutex, Outcome: locktrace.OutcomeAcquired, Waited: time.Hour})
	expect(t, lines())
}

func TestDefaultSlowAcquire(t *testing.T) {
	trace, lines := logTo(t, slog.LevelInfo)
	trace.AcquireDone(locktrace.AcquireDoneInfo{Lock: zkMutex, Outcome: locktrace.OutcomeAcquired, Waited: tracelog.DefaultSlowAcquire - 1})
	expect(t, lines())
	trace.AcquireDone(locktrace.AcquireDoneInfo{Lock: zkMutex, Outcome: locktrace.OutcomeAcquired, Waited: tracelog.DefaultSlowAcquire})
	expect(t, lines(), `level=WARN msg="slow lock acquisition" `+zkAttrs+` outcome=acquired waited=1s contended=false`)
}

func TestLeaseEnd(t *testing.T) {
	trace, lines := logTo(t, slog.LevelInfo)
	lost := errors.New("lock lost: session expired")

	trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Held: time.Minute, Cause: locktrace.EndSessionLost, Err: lost,
		Margin: 3 * time.Second, HasMargin: true, Token: 5, HasToken: true})
	expect(t, lines(), `level=ERROR msg="lock lost" `+zkAttrs+` cause=session_lost held=1m0s margin=3s err="lock lost: session expired" token=5`)

	// Told late: said so.
	trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: redisLock, Held: 2 * time.Second, Cause: locktrace.EndTTLLapsed, Err: lost,
		Margin: -20 * time.Millisecond, HasMargin: true})
	expect(t, lines(), `level=ERROR msg="lock lost (told after the server could let the lock go)" `+
		`lock.backend=redis lock.kind=lock lock.name=jobs cause=ttl_lapsed held=2s margin=-20ms err="lock lost: session expired"`)

	// No margin known: none shown.
	trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Held: time.Second, Cause: locktrace.EndGone, Err: lost})
	expect(t, lines(), `level=ERROR msg="lock lost" `+zkAttrs+` cause=gone held=1s err="lock lost: session expired"`)

	// Releases are Debug.
	trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Held: time.Second, Cause: locktrace.EndReleased, Err: recipes.ErrReleased})
	trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Held: time.Second, Cause: locktrace.EndRevoked, Err: recipes.ErrReleased})
	expect(t, lines())
}

func TestDebug(t *testing.T) {
	trace, lines := logTo(t, slog.LevelDebug)
	trace.AcquireQueued(locktrace.AcquireQueuedInfo{ID: 1, Lock: zkMutex})
	trace.AcquireDone(locktrace.AcquireDoneInfo{ID: 1, Lock: zkMutex, Outcome: locktrace.OutcomeAcquired,
		Waited: 10 * time.Millisecond, Contended: true, Token: 3, HasToken: true})
	trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Held: time.Second, Cause: locktrace.EndReleased, Err: recipes.ErrReleased,
		Token: 3, HasToken: true})
	trace.Renewal(locktrace.RenewalInfo{Lock: redisLock, Latency: 2 * time.Millisecond})
	expect(t, lines(),
		`level=DEBUG msg="lock contended, waiting" `+zkAttrs,
		`level=DEBUG msg="lock acquisition" `+zkAttrs+` outcome=acquired waited=10ms contended=true token=3`,
		`level=DEBUG msg="lock released" `+zkAttrs+` cause=released held=1s token=3`,
		`level=DEBUG msg="lock renewed" lock.backend=redis lock.kind=lock lock.name=jobs latency=2ms`)
}

func TestRenewal(t *testing.T) {
	trace, lines := logTo(t, slog.LevelInfo)
	trace.Renewal(locktrace.RenewalInfo{Lock: redisLock, Latency: time.Millisecond})
	expect(t, lines())
	trace.Renewal(locktrace.RenewalInfo{Lock: redisLock, Latency: 3 * time.Millisecond, Err: errors.New("i/o timeout")})
	expect(t, lines(), `level=WARN msg="lock renewal failed" lock.backend=redis lock.kind=lock lock.name=jobs latency=3ms err="i/o timeout"`)
}

func TestLeadership(t *testing.T) {
	trace, lines := logTo(t, slog.LevelInfo)
	id := locktrace.LockID{Backend: "zookeeper", Kind: "leader", Name: "/svc"}
	trace.Leadership(locktrace.LeadershipInfo{Lock: id, Leader: true})
	trace.Leadership(locktrace.LeadershipInfo{Lock: id, Err: errors.New("session lost")})
	expect(t, lines(),
		`level=INFO msg="leadership gained" lock.backend=zookeeper lock.kind=leader lock.name=/svc`,
		`level=WARN msg="leadership lost" lock.backend=zookeeper lock.kind=leader lock.name=/svc err="session lost"`)
}

// A disabled level costs no allocation.
func TestDisabledNoAlloc(t *testing.T) {
	trace := tracelog.New(slog.New(slog.DiscardHandler))
	done := locktrace.AcquireDoneInfo{Lock: zkMutex, Outcome: locktrace.OutcomeAcquired, Waited: time.Hour}
	end := locktrace.LeaseEndInfo{Lock: zkMutex, Cause: locktrace.EndSessionLost, Err: errors.New("x")}
	if n := testing.AllocsPerRun(100, func() {
		trace.AcquireDone(done)
		trace.LeaseEnd(end)
	}); n != 0 {
		t.Errorf("%v allocations per run with every level disabled", n)
	}
}

// A nil logger is slog.Default().
func TestNilLogger(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	t.Cleanup(func() { slog.SetDefault(old) })
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	tracelog.New(nil).LeaseEnd(locktrace.LeaseEndInfo{Lock: zkMutex, Cause: locktrace.EndClosed})
	if !strings.Contains(buf.String(), `msg="lock lost"`) || !strings.Contains(buf.String(), "cause=closed") {
		t.Errorf("logged %q", buf.String())
	}
}
