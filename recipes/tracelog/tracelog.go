// Package tracelog logs what the locks do to a log/slog Logger: New
// returns a locktrace.Trace whose hooks write records, to attach as any
// Trace is (locktrace.WithTrace for one call, session.WithTrace for a
// ZooKeeper client, each compat lock's WithTrace option).
//
// What is logged, at which level:
//
//	Error  a lock lost (a LeaseEnd whose cause is neither released nor
//	       revoked): cause, err, held, margin (the told-first margin, when
//	       the backend knows it), token; "lock lost (told after the
//	       server could let the lock go)" when the margin is negative
//	Warn   an acquisition that waited at least the slow threshold
//	       (WithSlowAcquire, default 1s), whatever its outcome; one that
//	       failed with locktrace.OutcomeError; a failed renewal; a
//	       leadership lost
//	Info   a leadership gained
//	Debug  every other acquisition, an acquisition found contended
//	       (queued), a release, a confirmed renewal
//
// Records carry the lock as "lock.backend", "lock.kind" and "lock.name",
// and, where they apply, "outcome", "waited", "contended", "held",
// "cause", "margin", "err" and "token" (Renewal's: "latency", "err").
//
// A ZooKeeper client's connection states are not lock events: the client
// logs them to the logger given by session.WithLogger.
//
// The hooks are called synchronously on the library's goroutines (see
// locktrace.Trace): they do nothing but check that the level is enabled
// and, if it is, hand one record to the Logger, so they block no longer
// than the Logger's handler takes. Give a slow handler (one that writes
// to the network, say) a buffer of its own. The records are logged with
// context.Background(), not the caller's context.
//
// The package imports only the standard library and recipes/locktrace.
package tracelog

import (
	"context"
	"log/slog"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// DefaultSlowAcquire is the default of WithSlowAcquire.
const DefaultSlowAcquire = time.Second

// The attribute keys of the records.
const (
	KeyBackend   = "lock.backend"
	KeyKind      = "lock.kind"
	KeyName      = "lock.name"
	KeyOutcome   = "outcome"
	KeyWaited    = "waited"
	KeyContended = "contended"
	KeyHeld      = "held"
	KeyCause     = "cause"
	KeyMargin    = "margin"
	KeyErr       = "err"
	KeyToken     = "token"
)

// Option configures New.
type Option func(*config)

type config struct {
	slow time.Duration
}

// WithSlowAcquire sets the slow threshold: an acquisition that waited at
// least d is logged at Warn (default DefaultSlowAcquire). Zero or a
// negative d turns the report off: acquisitions are then logged at Debug
// (Warn still when they fail with locktrace.OutcomeError).
func WithSlowAcquire(d time.Duration) Option {
	return func(c *config) { c.slow = d }
}

// New returns a Trace that logs to l (slog.Default() when l is nil), as
// the package documentation says.
func New(l *slog.Logger, opts ...Option) *locktrace.Trace {
	if l == nil {
		l = slog.Default()
	}
	c := config{slow: DefaultSlowAcquire}
	for _, o := range opts {
		o(&c)
	}
	t := tracer{l: l, slow: c.slow}
	return &locktrace.Trace{
		AcquireQueued: t.acquireQueued,
		AcquireDone:   t.acquireDone,
		LeaseEnd:      t.leaseEnd,
		Renewal:       t.renewal,
		Leadership:    t.leadership,
	}
}

type tracer struct {
	l    *slog.Logger
	slow time.Duration
}

// log writes a record at level, when it is enabled; attrs builds its
// attributes only then.
func (t tracer) log(level slog.Level, msg string, attrs func() []slog.Attr) {
	ctx := context.Background()
	if !t.l.Enabled(ctx, level) {
		return
	}
	t.l.LogAttrs(ctx, level, msg, attrs()...)
}

func lockAttrs(id locktrace.LockID, more ...slog.Attr) []slog.Attr {
	return append([]slog.Attr{
		slog.String(KeyBackend, id.Backend),
		slog.String(KeyKind, id.Kind),
		slog.String(KeyName, id.Name),
	}, more...)
}

func errAttr(as []slog.Attr, err error) []slog.Attr {
	if err != nil {
		as = append(as, slog.Any(KeyErr, err))
	}
	return as
}

func tokenAttr(as []slog.Attr, token int64, ok bool) []slog.Attr {
	if ok {
		as = append(as, slog.Int64(KeyToken, token))
	}
	return as
}

func (t tracer) acquireQueued(i locktrace.AcquireQueuedInfo) {
	t.log(slog.LevelDebug, "lock contended, waiting", func() []slog.Attr {
		as := lockAttrs(i.Lock)
		if i.Try {
			as = append(as, slog.Bool("try", true))
		}
		return as
	})
}

func (t tracer) acquireDone(i locktrace.AcquireDoneInfo) {
	level, msg := slog.LevelDebug, "lock acquisition"
	switch {
	case i.Outcome == locktrace.OutcomeError:
		level, msg = slog.LevelWarn, "lock acquisition failed"
	case t.slow > 0 && i.Waited >= t.slow:
		level, msg = slog.LevelWarn, "slow lock acquisition"
	}
	t.log(level, msg, func() []slog.Attr {
		as := lockAttrs(i.Lock,
			slog.String(KeyOutcome, string(i.Outcome)),
			slog.Duration(KeyWaited, i.Waited),
			slog.Bool(KeyContended, i.Contended))
		if i.Try {
			as = append(as, slog.Bool("try", true))
		}
		if i.Reentered {
			as = append(as, slog.Bool("reentered", true))
		}
		as = tokenAttr(as, i.Token, i.HasToken)
		// ErrLocked, a deadline, a cancellation say nothing the outcome
		// does not.
		if i.Outcome == locktrace.OutcomeError {
			as = errAttr(as, i.Err)
		}
		return as
	})
}

// lostLate is the message of a loss told after the server could let the
// lock go (a negative told-first margin).
const lostLate = "lock lost (told after the server could let the lock go)"

func (t tracer) leaseEnd(i locktrace.LeaseEndInfo) {
	level, msg := slog.LevelError, "lock lost"
	switch {
	case i.Cause == locktrace.EndReleased || i.Cause == locktrace.EndRevoked:
		level, msg = slog.LevelDebug, "lock released"
	case i.HasMargin && i.Margin < 0:
		msg = lostLate
	}
	t.log(level, msg, func() []slog.Attr {
		as := lockAttrs(i.Lock,
			slog.String(KeyCause, string(i.Cause)),
			slog.Duration(KeyHeld, i.Held))
		if i.HasMargin {
			as = append(as, slog.Duration(KeyMargin, i.Margin))
		}
		if level != slog.LevelDebug || (i.Err != nil && i.Err != recipes.ErrReleased) {
			as = errAttr(as, i.Err)
		}
		return tokenAttr(as, i.Token, i.HasToken)
	})
}

func (t tracer) renewal(i locktrace.RenewalInfo) {
	level, msg := slog.LevelDebug, "lock renewed"
	if i.Err != nil {
		level, msg = slog.LevelWarn, "lock renewal failed"
	}
	t.log(level, msg, func() []slog.Attr {
		return errAttr(lockAttrs(i.Lock, slog.Duration("latency", i.Latency)), i.Err)
	})
}

func (t tracer) leadership(i locktrace.LeadershipInfo) {
	level, msg := slog.LevelInfo, "leadership gained"
	if !i.Leader {
		level, msg = slog.LevelWarn, "leadership lost"
	}
	t.log(level, msg, func() []slog.Attr { return errAttr(lockAttrs(i.Lock), i.Err) })
}
