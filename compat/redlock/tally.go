package redlock

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// tally is what the servers answered one attempt to take the lock.
type tally struct {
	n, quorum            int
	took, held           int
	quiet                []time.Duration // what is left of each quiet server's quiet period
	transient, permanent []error
	evicts               error // a server that may evict the lock's keys
}

// count tallies the replies of an attempt, one per server.
func count(rs []reply, quorum int) tally {
	t := tally{n: len(rs), quorum: quorum}
	for _, r := range rs {
		switch {
		case errors.Is(r.err, redisguard.ErrEviction):
			t.evicts = r.err
		case errors.Is(r.err, ttl.ErrPermanent):
			t.permanent = append(t.permanent, r.err)
		case r.err != nil:
			t.transient = append(t.transient, r.err)
		case r.code == codeTaken:
			t.took++
		case r.code == codeQuiet:
			t.quiet = append(t.quiet, time.Duration(r.n)*time.Millisecond)
		default:
			t.held++
		}
	}
	return t
}

// step is what an Acquire does after an attempt.
type step int

const (
	stepHold   step = iota // hold the lock
	stepRetry              // release what it took, wait, try again
	stepGiveUp             // release what it took and return the error
)

// next decides what follows the attempt t of the lock named what (its
// String, "redlock orders"); wait is false
// for TryAcquire, and ended is recipes.NotAcquired(ctx) once the caller's
// ctx has ended (else nil). The error is the one to return on stepGiveUp.
func (t tally) next(what string, wait bool, ended error) (step, error) {
	switch {
	case t.evicts != nil:
		// A setting: trying again cannot mend it, and counting the server
		// as down would hide it while it takes away the tolerance of a
		// failure (see WithoutEvictionCheck). First, before a majority
		// the others gave: the refusal must not depend on whether they
		// were quiet.
		return stepGiveUp, fmt.Errorf("%w: %w", recipes.ErrNotAcquired, t.evicts)
	case t.took >= t.quorum:
		return stepHold, nil
	case len(t.permanent) > t.n-t.quorum:
		// No majority is possible without the servers that cannot answer.
		return stepGiveUp, fmt.Errorf("%w: %s: %d of %d servers cannot take it, %d needed: %w",
			recipes.ErrNotAcquired, what, len(t.permanent), t.n, t.quorum, oneLine(t.permanent))
	case ended != nil:
		return stepGiveUp, fmt.Errorf("%w (%s, last attempt: %v)", ended, what, t)
	case wait:
		return stepRetry, nil
	case t.held > t.n-t.quorum:
		return stepGiveUp, t.wrap(recipes.ErrLocked, what)
	case t.heldElsewhere():
		// Only with the quiet servers is a majority ruled out: the lock
		// may be free, which the error says.
		return stepGiveUp, t.wrap(fmt.Errorf("%w: %w", recipes.ErrLocked, ErrQuiet), what)
	}
	// Servers did not answer: the lock is not known to be held.
	return stepGiveUp, t.wrap(recipes.ErrNotAcquired, what)
}

// unanswered is the errors of the servers that failed attempt t when
// they leave no majority possible (nil when they do not): an Acquire
// that runs out of time after it says the servers did not answer (see
// recipes.NotAcquiredAfter), not that the lock is held.
func (t tally) unanswered() error {
	if len(t.permanent)+len(t.transient) <= t.n-t.quorum {
		return nil
	}
	return oneLine(slices.Concat(t.permanent, t.transient))
}

// tell tells a what ruled a majority out in attempt t, if anything did:
// a holder (Queued), servers in their quiet period (Quiet), or both.
func (t tally) tell(a *hold.Acquisition) {
	if !t.heldElsewhere() {
		return
	}
	if t.held > 0 {
		a.Queued()
	}
	if len(t.quiet) > 0 {
		a.Quiet()
	}
}

// heldElsewhere reports whether the servers' answers rule a majority out:
// it is held (or may be, by a holder that a restarted server forgot).
func (t tally) heldElsewhere() bool { return t.held+len(t.quiet) > t.n-t.quorum }

// wrap is sentinel with what the servers of the lock named what answered,
// and the errors they gave.
func (t tally) wrap(sentinel error, what string) error {
	errs := append(slices.Clone(t.permanent), t.transient...)
	if len(errs) == 0 {
		return fmt.Errorf("%w: %s: %v", sentinel, what, t)
	}
	return fmt.Errorf("%w: %s: %v: %w", sentinel, what, t, oneLine(errs))
}

// quietWait is how long until enough servers are out of their quiet
// period for a majority to be possible: no attempt can succeed before.
func (t tally) quietWait() time.Duration {
	short := t.quorum - (t.n - len(t.quiet)) // servers that must come out of it
	if short <= 0 {
		return 0
	}
	q := slices.Clone(t.quiet)
	slices.Sort(q)
	return q[short-1]
}

// String counts what the servers answered, for errors.
func (t tally) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d servers gave it, %d needed", t.took, t.n, t.quorum)
	if t.held > 0 {
		fmt.Fprintf(&b, "; %d held by another", t.held)
	}
	if len(t.quiet) > 0 {
		fmt.Fprintf(&b, "; %d restarted less than a TTL ago and may have forgotten a holder: they grant nothing for up to %v",
			len(t.quiet), slices.Max(t.quiet))
	}
	if n := len(t.permanent) + len(t.transient); n > 0 {
		fmt.Fprintf(&b, "; %d failed", n)
	}
	return b.String()
}

// oneLine joins errors as errors.Join does, on one line.
type oneLine []error

func (e oneLine) Error() string {
	s := make([]string, len(e))
	for i, err := range e {
		s[i] = err.Error()
	}
	return strings.Join(s, "; ")
}

func (e oneLine) Unwrap() []error { return e }
