package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// leaseTrace is -v's report of the wait and of the lease's end, fed by a
// locktrace.Trace on the acquire's context (locktrace.WithTrace), the same on
// every backend. AcquireDone is kept for the messages run.go prints after
// the acquire; LeaseEnd and a failed Renewal are printed from the hook,
// one line on stderr each, as the library reports them (a loss as soon as
// the holder is told, before COMMAND is terminated).
type leaseTrace struct {
	rep  *reporter
	name string // the lock, as messages name it

	ended   chan struct{} // closed once the lease's end was printed
	endOnce sync.Once

	mu       sync.Mutex
	done     locktrace.AcquireDoneInfo
	hasDone  bool
	acquired time.Time // when the acquire returned with the lease
}

// endReportWait bounds how long zklock waits, after a loss, for the
// library's report of it (made on the goroutine that saw the loss, just
// after the lease's context was cancelled), so that -v prints it before
// zklock exits.
const endReportWait = 2 * time.Second

func newLeaseTrace(rep *reporter, name string) *leaseTrace {
	return &leaseTrace{rep: rep, name: name, ended: make(chan struct{})}
}

// trace is the Trace to attach to the acquire's context.
func (lt *leaseTrace) trace() *locktrace.Trace {
	return &locktrace.Trace{AcquireDone: lt.acquireDone, LeaseEnd: lt.leaseEnd, Renewal: lt.renewal}
}

func (lt *leaseTrace) acquireDone(i locktrace.AcquireDoneInfo) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	lt.done, lt.hasDone = i, true
	if i.Outcome == locktrace.OutcomeAcquired {
		lt.acquired = time.Now()
	}
}

// waited is " after waiting D (contended)" (or "(uncontended)", "(quiet
// period after a restart)": see contention) for the acquired message, ""
// when the acquire was not reported.
func (lt *leaseTrace) waited() string {
	if lt == nil {
		return ""
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if !lt.hasDone {
		return ""
	}
	return fmt.Sprintf(" after waiting %s (%s)", fmtDuration(lt.done.Waited), contention(lt.done))
}

// gaveUp is "waited D for LOCK: OUTCOME (contended)", for a wait that
// ended without the lock; "" when it was not reported.
func (lt *leaseTrace) gaveUp() string {
	if lt == nil {
		return ""
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if !lt.hasDone || lt.done.Outcome == locktrace.OutcomeAcquired {
		return ""
	}
	return fmt.Sprintf("waited %s for %s: %s (%s)", fmtDuration(lt.done.Waited), lt.name, lt.done.Outcome, contention(lt.done))
}

// contention says what kept an acquire waiting (or refused a --try): a
// holder ("contended"), a server's quiet period after a restart, in
// which the lock may be free, both, or nothing ("uncontended").
func contention(i locktrace.AcquireDoneInfo) string {
	switch {
	case i.Contended && i.Quiet:
		return "contended; quiet period after a restart"
	case i.Quiet:
		return "quiet period after a restart"
	case i.Contended:
		return "contended"
	}
	return "uncontended"
}

// leaseEnd prints how long the lock was held and why the holding ended:
// "held LOCK for D: released", or "held LOCK for D: lost (CAUSE; told D
// before the server could let the lock go): ERR". The time held is
// counted from the acquire's return (the library's Held counts from its
// start) to the report.
func (lt *leaseTrace) leaseEnd(i locktrace.LeaseEndInfo) {
	held := i.Held
	lt.mu.Lock()
	if !lt.acquired.IsZero() {
		held = time.Since(lt.acquired)
	}
	lt.mu.Unlock()
	lt.rep.infof("%s", leaseEndMessage(lt.name, held, i))
	lt.endOnce.Do(func() { close(lt.ended) })
}

// awaitEnd waits (at most endReportWait) until the lease's end was
// printed. lt may be nil.
func (lt *leaseTrace) awaitEnd() {
	if lt == nil {
		return
	}
	t := time.NewTimer(endReportWait)
	defer t.Stop()
	select {
	case <-lt.ended:
	case <-t.C:
	}
}

func leaseEndMessage(name string, held time.Duration, i locktrace.LeaseEndInfo) string {
	msg := fmt.Sprintf("held %s for %s: ", name, fmtDuration(held))
	switch i.Cause {
	case locktrace.EndReleased:
		return msg + "released"
	case locktrace.EndRevoked:
		return msg + "released on request (revoked)"
	}
	msg += "lost (" + causeText(i.Cause)
	if i.HasMargin {
		if i.Margin >= 0 {
			msg += fmt.Sprintf("; told %s before the server could let the lock go", fmtDuration(i.Margin))
		} else {
			msg += fmt.Sprintf("; told %s after the server could let the lock go", fmtDuration(-i.Margin))
		}
	}
	msg += ")"
	if i.Err != nil {
		msg += ": " + i.Err.Error()
	}
	return msg
}

// causeText says a lease's end cause in words.
func causeText(c locktrace.EndCause) string {
	switch c {
	case locktrace.EndSuspended:
		return "connection suspended"
	case locktrace.EndSessionLost:
		return "session lost"
	case locktrace.EndClosed:
		return "client closed"
	case locktrace.EndTTLLapsed:
		return "TTL lapsed"
	case locktrace.EndGone:
		return "lock gone from the server"
	case locktrace.EndRenewalFailed:
		return "renewal failed"
	}
	return string(c)
}

// renewal prints a failed renewal of a TTL lease (the lease may still be
// held: a renewal is retried while the TTL allows).
func (lt *leaseTrace) renewal(i locktrace.RenewalInfo) {
	if i.Err != nil {
		lt.rep.infof("renewing %s failed after %s: %v", lt.name, fmtDuration(i.Latency), i.Err)
	}
}

// fmtDuration shows a duration to the millisecond (to the microsecond
// below one): "1.203s", "15ms", "850µs".
func fmtDuration(d time.Duration) string {
	if d > -time.Millisecond && d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
