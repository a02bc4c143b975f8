package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Backend is what a lock implementation gives the suite.
type Backend struct {
	// New returns a Locker for the lock named name (a short token like
	// "excl-1"; the backend maps it to a path or key). Each call is an
	// independent contender — its own session or connection where the
	// backend has them — so two Lockers from New on one name exclude each
	// other (unless Shared). New is called from the test's goroutine and may
	// fail t.
	New func(t *testing.T, name string) recipes.Locker
	// Lose makes the lock held by lease untrustworthy as a real fault would
	// (expire its session, delete its node or key) and returns once the
	// fault is injected. Required.
	Lose func(t *testing.T, name string, lease recipes.Lease)
	// Leftovers lists what the backend has on its server for name (nodes,
	// keys). It is called when no lease should exist; the suite expects an
	// empty list, and polls a bounded number of times since cleanup may be
	// asynchronous. Nil: not checked.
	Leftovers func(t *testing.T, name string) []string
	// Reentrant: Acquire(lease.Context()) on the same Locker while holding
	// re-enters at once and needs its own Release.
	Reentrant bool
	// NoTokens: the backend has no fencing tokens (Redlock); its leases'
	// Token must say so, (0, false). Otherwise every lease must have one,
	// and they must increase.
	NoTokens bool
	// Contenders and Rounds size the contention scenarios (DefaultContenders
	// and DefaultRounds when zero).
	Contenders, Rounds int
	// Shared: Lockers from New share the lock with each other (a read lock).
	// Scenarios that need a holder who keeps the others out use Blocker for
	// that holder, and the exclusion scenario checks instead that sharers
	// overlap freely while a Blocker holder excludes them all.
	Shared bool
	// Blocker returns, for a Shared backend, a Locker on the same name that
	// excludes the sharers (the write half). Required when Shared.
	Blocker func(t *testing.T, name string) recipes.Locker
}

// Defaults of Backend.Contenders and Backend.Rounds.
const (
	// DefaultContenders is how many Lockers contend for one lock.
	DefaultContenders = 4
	// DefaultRounds is how many times each contender takes the lock.
	DefaultRounds = 10
)

const (
	// scenarioTimeout bounds each scenario: every wait in it ends by then.
	scenarioTimeout = 30 * time.Second
	// promptTimeout bounds a call the contract says returns at once
	// (TryAcquire on a held lock, a reentrant Acquire), so that one that
	// waits instead is reported as waiting rather than as a timeout.
	promptTimeout = 10 * time.Second
	// cleanupTimeout bounds a Release made to clean up, which may run after
	// the scenario's context is done.
	cleanupTimeout = 10 * time.Second
	// leftoverPolls and leftoverInterval bound the polling of
	// Backend.Leftovers: 50 polls 100ms apart.
	leftoverPolls    = 50
	leftoverInterval = 100 * time.Millisecond
)

// checkFunc is one scenario. It returns an error describing the violation it
// found, or nil. ctx bounds every wait; name is the scenario's own lock.
type checkFunc func(ctx context.Context, t *testing.T, b Backend, name string) error

// scenario is one subtest of Run.
type scenario struct {
	title     string // subtest name
	lock      string // prefix of the lock name
	check     checkFunc
	reentrant only // the backends it runs on
}

// only restricts a scenario to reentrant backends or to the others.
type only int

const (
	everyBackend     only = iota
	reentrantOnly         // Backend.Reentrant
	nonReentrantOnly      // not Backend.Reentrant
)

var scenarios = []scenario{
	{title: "MutualExclusion", lock: "excl", check: checkExclusion},
	{title: "TryAcquire", lock: "try", check: checkTryAcquire},
	{title: "CancelWhileWaiting", lock: "cancel", check: checkCancelWhileWaiting},
	{title: "ReleaseTwice", lock: "release", check: checkReleaseTwice},
	{title: "LostLock", lock: "lost", check: checkLoss},
	{title: "TokensIncrease", lock: "token", check: checkTokens},
	{title: "BadInput", lock: "input", check: checkBadInput},
	{title: "ReleaseFromOtherGoroutine", lock: "other", check: checkReleaseElsewhere},
	{title: "Reentrant", lock: "reenter", check: checkReentrant, reentrant: reentrantOnly},
	{title: "NotReentrant", lock: "noreenter", check: checkNotReentrant, reentrant: nonReentrantOnly},
	{title: "WithLock", lock: "withlock", check: checkWithLock},
	{title: "WithLockPanic", lock: "panic", check: checkWithLockPanic},
}

// lockSeq numbers lock names, so that every scenario of every Run in the
// process has a lock of its own even when backends share a server.
var lockSeq atomic.Int64

func lockName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, lockSeq.Add(1))
}

// Run runs every scenario as a subtest of t.
func Run(t *testing.T, b Backend) {
	t.Helper()
	if err := b.validate(); err != nil {
		t.Fatal(err)
	}
	for _, s := range scenarios {
		t.Run(s.title, func(t *testing.T) {
			if !s.runsOn(b) {
				t.Skip(s.skipReason())
			}
			name := lockName(s.lock)
			ctx, cancel := context.WithTimeout(t.Context(), scenarioTimeout)
			defer cancel()
			if err := s.check(ctx, t, b, name); err != nil {
				t.Fatalf("lock %s: %v", name, err)
			}
			if err := checkLeftovers(ctx, t, b, name); err != nil {
				t.Errorf("lock %s: %v", name, err)
			}
		})
	}
}

// runsOn reports whether s applies to b.
func (s scenario) runsOn(b Backend) bool {
	return s.reentrant == everyBackend || (s.reentrant == reentrantOnly) == b.Reentrant
}

func (s scenario) skipReason() string {
	if s.reentrant == reentrantOnly {
		return "the backend is not reentrant"
	}
	return "the backend is reentrant"
}

// validate checks that b describes a backend Run can test.
func (b Backend) validate() error {
	switch {
	case b.New == nil:
		return errors.New("locktest: Backend.New is required")
	case b.Lose == nil:
		return errors.New("locktest: Backend.Lose is required")
	case b.Contenders < 0 || b.Rounds < 0:
		return fmt.Errorf("locktest: Backend.Contenders (%d) and Rounds (%d) must not be negative", b.Contenders, b.Rounds)
	case b.Shared && b.Blocker == nil:
		return errors.New("locktest: Backend.Blocker is required when Backend.Shared is set")
	case !b.Shared && b.Blocker != nil:
		return errors.New("locktest: Backend.Blocker is set but Backend.Shared is not (an exclusive backend's Lockers block each other)")
	}
	return nil
}

// excluder returns a Locker on name that keeps every Locker from New out
// while it holds: a Blocker for a Shared backend, another contender from New
// otherwise. Scenarios use it for "the lock is held by someone else".
func (b Backend) excluder(t *testing.T, name string) recipes.Locker {
	if b.Shared {
		return b.Blocker(t, name)
	}
	return b.New(t, name)
}

// other names the excluder in messages.
func (b Backend) other() string {
	if b.Shared {
		return "a Blocker"
	}
	return "another contender"
}

func (b Backend) contenders() int {
	if b.Contenders > 0 {
		return b.Contenders
	}
	return DefaultContenders
}

func (b Backend) rounds() int {
	if b.Rounds > 0 {
		return b.Rounds
	}
	return DefaultRounds
}

// checkLeftovers checks that the backend has nothing left on its server for
// name, polling while cleanup may still be under way.
func checkLeftovers(ctx context.Context, t *testing.T, b Backend, name string) error {
	if b.Leftovers == nil {
		return nil
	}
	for poll := 1; ; poll++ {
		left := b.Leftovers(t, name)
		if len(left) == 0 {
			return nil
		}
		if poll == leftoverPolls {
			return fmt.Errorf("left on the server after %d polls: %q", poll, left)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("left on the server when the wait ended (%v): %q", context.Cause(ctx), left)
		case <-time.After(leftoverInterval):
		}
	}
}
