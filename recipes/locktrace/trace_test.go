package locktrace_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

func TestOutcomeOf(t *testing.T) {
	for err, want := range map[error]locktrace.Outcome{
		nil:                                    locktrace.OutcomeAcquired,
		fmt.Errorf("x: %w", recipes.ErrLocked): locktrace.OutcomeLocked,
		context.DeadlineExceeded:               locktrace.OutcomeTimeout,
		fmt.Errorf("waiting: %w", context.Canceled): locktrace.OutcomeCanceled,
		errors.New("boom"):                          locktrace.OutcomeError,
	} {
		if got := locktrace.OutcomeOf(err); got != want {
			t.Errorf("OutcomeOf(%v) = %q, want %q", err, got, want)
		}
	}
}

func TestEndCauseOf(t *testing.T) {
	lapsed := locktrace.NewEndError("ttl lapsed", locktrace.EndTTLLapsed)
	for err, want := range map[error]locktrace.EndCause{
		nil:                 locktrace.EndReleased,
		recipes.ErrReleased: locktrace.EndReleased,
		fmt.Errorf("%w: %w", recipes.ErrLockLost, lapsed): locktrace.EndTTLLapsed,
		recipes.ErrLockLost: locktrace.EndLost,
	} {
		if got := locktrace.EndCauseOf(err); got != want {
			t.Errorf("EndCauseOf(%v) = %q, want %q", err, got, want)
		}
	}
	if lapsed.Error() != "ttl lapsed" {
		t.Errorf("NewEndError's text = %q", lapsed.Error())
	}
}

// A trace given by WithTrace is called before the one the context
// already carried, and a nil hook on either side is skipped.
func TestWithTraceChains(t *testing.T) {
	var calls []string
	outer := &locktrace.Trace{AcquireStart: func(locktrace.AcquireStartInfo) { calls = append(calls, "outer") }}
	inner := &locktrace.Trace{
		AcquireStart: func(locktrace.AcquireStartInfo) { calls = append(calls, "inner") },
		Renewal:      func(locktrace.RenewalInfo) { calls = append(calls, "renewal") },
	}
	ctx := locktrace.WithTrace(locktrace.WithTrace(context.Background(), outer), inner)
	got := locktrace.ContextTrace(ctx)
	got.AcquireStart(locktrace.AcquireStartInfo{})
	got.Renewal(locktrace.RenewalInfo{})
	if fmt.Sprint(calls) != "[inner outer renewal]" {
		t.Errorf("calls = %v", calls)
	}
	if got.LeaseEnd != nil {
		t.Error("a hook neither trace has is not made up")
	}
	if locktrace.ContextTrace(context.Background()) != nil {
		t.Error("a context without a trace carries none")
	}
	var none *locktrace.Trace
	if none.And(inner) != inner || inner.And(nil) != inner {
		t.Error("And with nil returns the other")
	}
}
