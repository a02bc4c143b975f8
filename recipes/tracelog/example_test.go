package tracelog_test

import (
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/recipes/tracelog"
)

// The Trace logs a slow acquisition at Warn and a loss at Error. Here its
// hooks are called by hand, with made-up reports, as a lock would call
// them; attach it with locktrace.WithTrace(ctx, trace) (one call),
// session.WithTrace (a ZooKeeper client) or a compat lock's WithTrace.
func Example() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // no time: the output is the same on every run
			}
			return a
		},
	}))
	trace := tracelog.New(logger, tracelog.WithSlowAcquire(2*time.Second))

	lock := locktrace.LockID{Backend: "zookeeper", Kind: "mutex", Name: "/jobs/backup"}
	trace.AcquireDone(locktrace.AcquireDoneInfo{ID: 1, Lock: lock, Outcome: locktrace.OutcomeAcquired,
		Waited: 3500 * time.Millisecond, Contended: true, Token: 42, HasToken: true})
	trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: lock, Held: 90 * time.Second, Cause: locktrace.EndSessionLost,
		Err: errors.New("lock lost: session expired"), Margin: 4 * time.Second, HasMargin: true, Token: 42, HasToken: true})

	ttl := locktrace.LockID{Backend: "redis", Kind: "lock", Name: "reports"}
	trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: ttl, Held: 12 * time.Second, Cause: locktrace.EndTTLLapsed,
		Err: errors.New("lock lost: TTL lapsed"), Margin: -150 * time.Millisecond, HasMargin: true, Token: 7, HasToken: true})
	// A release is logged at Debug: not shown by this handler (Info and up).
	trace.LeaseEnd(locktrace.LeaseEndInfo{Lock: lock, Held: time.Second, Cause: locktrace.EndReleased, Err: recipes.ErrReleased})

	// Output:
	// level=WARN msg="slow lock acquisition" lock.backend=zookeeper lock.kind=mutex lock.name=/jobs/backup outcome=acquired waited=3.5s contended=true token=42
	// level=ERROR msg="lock lost" lock.backend=zookeeper lock.kind=mutex lock.name=/jobs/backup cause=session_lost held=1m30s margin=4s err="lock lost: session expired" token=42
	// level=ERROR msg="lock lost (told after the server could let the lock go)" lock.backend=redis lock.kind=lock lock.name=reports cause=ttl_lapsed held=12s margin=-150ms err="lock lost: TTL lapsed" token=7
}
